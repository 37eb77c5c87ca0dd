module github.com/drover-sched/drover

go 1.26.0

require (
	github.com/google/uuid v1.6.0
	github.com/hashicorp/go-version v1.9.0
	github.com/hashicorp/nomad/api v0.0.0-20261016150620-df630b26e78a
	go.etcd.io/bbolt v1.5.0
	go.uber.org/zap v1.28.0
)

require (
	github.com/go-viper/mapstructure/v2 v2.5.0 // indirect
	github.com/gorilla/websocket v1.5.3 // indirect
	github.com/hashicorp/cronexpr v1.1.3 // indirect
	github.com/hashicorp/go-cleanhttp v0.5.2 // indirect
	github.com/hashicorp/go-rootcerts v1.0.2 // indirect
	github.com/mitchellh/go-homedir v1.1.0 // indirect
	go.uber.org/multierr v1.10.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
)
