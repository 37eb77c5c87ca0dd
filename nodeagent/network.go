package nodeagent

import (
	"errors"
	"fmt"
	"net"
	"strconv"

	"github.com/drover-sched/drover/structs"
)

// The node's host network: the address its allocs' ports are on, the range
// dynamic ports are chosen from and the ports kept from scheduling, as
// Nomad's client fingerprints them (network_interface, min_dynamic_port,
// max_dynamic_port, reserved.reserved_ports).

// hostNetwork is what the agent advertises of its network.
type hostNetwork struct {
	ip, device string
}

// checkNetworkConfig validates the port settings of cfg and fills the
// range's defaults.
func checkNetworkConfig(cfg *Config) error {
	if cfg.MinDynamicPort == 0 {
		cfg.MinDynamicPort = structs.DefaultMinDynamicPort
	}
	if cfg.MaxDynamicPort == 0 {
		cfg.MaxDynamicPort = structs.DefaultMaxDynamicPort
	}
	switch {
	case cfg.MinDynamicPort < 1 || cfg.MinDynamicPort > structs.MaxValidPort:
		return fmt.Errorf("min dynamic port %d: must be between 1 and %d", cfg.MinDynamicPort, structs.MaxValidPort)
	case cfg.MaxDynamicPort < 1 || cfg.MaxDynamicPort > structs.MaxValidPort:
		return fmt.Errorf("max dynamic port %d: must be between 1 and %d", cfg.MaxDynamicPort, structs.MaxValidPort)
	case cfg.MinDynamicPort > cfg.MaxDynamicPort:
		return fmt.Errorf("dynamic port range %d-%d: the minimum is above the maximum", cfg.MinDynamicPort, cfg.MaxDynamicPort)
	}
	if _, err := structs.ParsePortSpec(cfg.ReservedPorts); err != nil {
		return fmt.Errorf("reserved ports %q: %w", cfg.ReservedPorts, err)
	}
	if cfg.NetworkAddress != "" && net.ParseIP(cfg.NetworkAddress) == nil {
		return fmt.Errorf("network address %q: not an IP address", cfg.NetworkAddress)
	}
	return nil
}

// findHostNetwork picks the node's address: NetworkAddress when set; else
// the first address of NetworkInterface; else, in dev mode, the loopback
// address (Nomad's dev agent uses the loopback interface); else the first
// IPv4 address of an interface that is up and not the loopback, and the
// loopback when there is none.
func findHostNetwork(cfg *Config) (hostNetwork, error) {
	ifaces, _ := net.Interfaces()
	deviceOf := func(ip net.IP) string {
		for _, ifc := range ifaces {
			addrs, _ := ifc.Addrs()
			for _, a := range addrs {
				if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
					return ifc.Name
				}
			}
		}
		return ""
	}
	switch {
	case cfg.NetworkAddress != "":
		ip := net.ParseIP(cfg.NetworkAddress)
		return hostNetwork{ip: ip.String(), device: deviceOf(ip)}, nil
	case cfg.NetworkInterface != "":
		ifc, err := net.InterfaceByName(cfg.NetworkInterface)
		if err != nil {
			return hostNetwork{}, fmt.Errorf("network interface %q: %w", cfg.NetworkInterface, err)
		}
		addrs, err := ifc.Addrs()
		if err != nil {
			return hostNetwork{}, fmt.Errorf("network interface %q: %w", cfg.NetworkInterface, err)
		}
		var v6 net.IP
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok {
				if n.IP.To4() != nil {
					return hostNetwork{ip: n.IP.String(), device: ifc.Name}, nil
				}
				if v6 == nil && !n.IP.IsLinkLocalUnicast() {
					v6 = n.IP
				}
			}
		}
		if v6 != nil {
			return hostNetwork{ip: v6.String(), device: ifc.Name}, nil
		}
		return hostNetwork{}, errors.New("network interface " + strconv.Quote(cfg.NetworkInterface) + " has no address")
	case cfg.DevMode:
		lo := net.IPv4(127, 0, 0, 1)
		return hostNetwork{ip: lo.String(), device: deviceOf(lo)}, nil
	}
	for _, ifc := range ifaces {
		if ifc.Flags&net.FlagUp == 0 || ifc.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, _ := ifc.Addrs()
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil {
				return hostNetwork{ip: n.IP.String(), device: ifc.Name}, nil
			}
		}
	}
	lo := net.IPv4(127, 0, 0, 1)
	return hostNetwork{ip: lo.String(), device: deviceOf(lo)}, nil
}

// fingerprintNetwork adds the node's network to what it offers: its host
// network, the dynamic port range, the reserved ports, and the attribute
// unique.network.ip-address, as Nomad's network fingerprint.
func fingerprintNetwork(cfg *Config, attrs map[string]string, res *structs.NodeResources) (*structs.NodeReservedResources, error) {
	hn, err := findHostNetwork(cfg)
	if err != nil {
		return nil, err
	}
	cidr := hn.ip + "/32"
	if net.ParseIP(hn.ip).To4() == nil {
		cidr = hn.ip + "/128"
	}
	res.Networks = []*structs.NetworkResource{{Mode: structs.NetworkModeHost, Device: hn.device, IP: hn.ip, CIDR: cidr}}
	res.MinDynamicPort, res.MaxDynamicPort = cfg.MinDynamicPort, cfg.MaxDynamicPort
	attrs["unique.network.ip-address"] = hn.ip
	reserved := &structs.NodeReservedResources{}
	reserved.Networks.ReservedHostPorts = cfg.ReservedPorts
	return reserved, nil
}
