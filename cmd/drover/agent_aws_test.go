package main

import (
	"context"
	"strings"
	"testing"
)

// TestAgentAWSRegion: the node agent's region is the environment's when
// set, else the one in the API's execute-api host name; with neither (and
// no instance metadata) it fails naming AWS_REGION.
func TestAgentAWSRegion(t *testing.T) {
	t.Setenv("AWS_CONFIG_FILE", "/nonexistent")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_DEFAULT_REGION", "")
	ctx := context.Background()
	for _, c := range []struct{ env, url, want string }{
		{"", "https://a1b2c3d4e5.execute-api.eu-west-3.amazonaws.com", "eu-west-3"},
		{"", "https://a1b2c3d4e5.execute-api.cn-north-1.amazonaws.com.cn/", "cn-north-1"},
		{"us-east-2", "https://a1b2c3d4e5.execute-api.eu-west-3.amazonaws.com", "us-east-2"},
		{"us-east-2", "http://127.0.0.1:4566", "us-east-2"},
	} {
		t.Setenv("AWS_REGION", c.env)
		cfg, err := agentAWSConfig(ctx, c.url)
		if err != nil || cfg.Region != c.want {
			t.Errorf("AWS_REGION=%q, API %s: region %q, %v; want %q", c.env, c.url, cfg.Region, err, c.want)
		}
	}
	t.Setenv("AWS_REGION", "")
	if _, err := agentAWSConfig(ctx, "https://api.example.com"); err == nil || !strings.Contains(err.Error(), "AWS_REGION") {
		t.Errorf("no region anywhere: %v, want an error naming AWS_REGION", err)
	}
}
