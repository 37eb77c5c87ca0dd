package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"net/netip"
	"runtime"
	"sync"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
	"go.uber.org/zap"

	"github.com/drover-sched/drover/drivers"
)

// Bridge networking: an alloc whose group network is in bridge mode gets a
// pause container of its own on Docker's default bridge network. It holds
// the alloc's network namespace and publishes the alloc's host ports into
// it; the group's task containers join it (network_mode
// container:<pause ID>), so they share one localhost and one address, as
// in Nomad, where a pause container holds the namespace and CNI's bridge
// and portmap plugins wire it. drover lets Docker's own bridge and port
// publishing do the wiring, so a node needs no CNI plugins.

var _ drivers.NetworkManager = (*Driver)(nil)

// labelPause marks an alloc's pause container (with the alloc's labels).
const labelPause = "drover.pause"

// pauseName is the name of an alloc's pause container (Nomad's is
// nomad_init_<alloc ID>).
func pauseName(allocID string) string { return "drover_init_" + allocID }

// CreateNetwork implements drivers.NetworkManager: the alloc's pause
// container, created and started unless it already runs (an agent that
// restarted finds it by name).
func (d *Driver) CreateNetwork(ctx context.Context, req *drivers.NetworkCreateRequest) (*drivers.NetworkIsolation, error) {
	name := pauseName(req.AllocID)
	if ins, err := d.client.ContainerInspect(ctx, name, client.ContainerInspectOptions{}); err == nil {
		if ins.Container.State == nil || !ins.Container.State.Running {
			if _, err := d.client.ContainerStart(ctx, ins.Container.ID, client.ContainerStartOptions{}); err != nil {
				return nil, fmt.Errorf("start the alloc's pause container %s: %w", name, err)
			}
		}
		return d.isolation(ctx, ins.Container.ID, req.Hostname)
	} else if !cerrdefs.IsNotFound(err) {
		return nil, fmt.Errorf("inspect the alloc's pause container %s: %w", name, err)
	}
	image, err := d.ensureInfraImage(ctx)
	if err != nil {
		return nil, err
	}
	exposed, bindings, err := publish(req.Ports)
	if err != nil {
		return nil, err
	}
	var dns []netip.Addr
	var search, options []string
	if d := req.DNS; d != nil {
		for _, s := range d.Servers {
			a, err := netip.ParseAddr(s)
			if err != nil {
				return nil, fmt.Errorf("dns servers: %w", err)
			}
			dns = append(dns, a)
		}
		search, options = d.Searches, d.Options
	}
	labels := map[string]string{labelAllocID: req.AllocID, labelJobID: req.JobID, labelNamespace: req.Namespace,
		labelTaskGroup: req.TaskGroup, labelPause: "true"}
	opts := client.ContainerCreateOptions{Name: name,
		Config: &container.Config{Image: image, Labels: labels, Hostname: req.Hostname, ExposedPorts: exposed},
		// The tasks that join the namespace share its resolv.conf.
		HostConfig: &container.HostConfig{PortBindings: bindings, DNS: dns, DNSSearch: search, DNSOptions: options,
			// A few MiB are plenty for a process that only waits.
			Resources: container.Resources{Memory: 16 << 20, MemorySwap: 16 << 20, CPUShares: 2}},
	}
	created, err := d.client.ContainerCreate(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("create the alloc's pause container: %w", err)
	}
	if _, err := d.client.ContainerStart(ctx, created.ID, client.ContainerStartOptions{}); err != nil {
		_, _ = d.client.ContainerRemove(context.Background(), created.ID, client.ContainerRemoveOptions{Force: true})
		return nil, fmt.Errorf("start the alloc's pause container (are its host ports free?): %w", err)
	}
	d.logger.Info("alloc network created", zap.String("alloc_id", req.AllocID), zap.String("container_id", created.ID))
	return d.isolation(ctx, created.ID, req.Hostname)
}

// isolation describes the namespace of the pause container id: its
// address on the bridge network.
func (d *Driver) isolation(ctx context.Context, id, hostname string) (*drivers.NetworkIsolation, error) {
	ins, err := d.client.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	if err != nil {
		return nil, fmt.Errorf("inspect the alloc's pause container: %w", err)
	}
	iso := &drivers.NetworkIsolation{Mode: drivers.NetworkIsolationModeGroup, Driver: Name, SandboxID: ins.Container.ID, Hostname: hostname}
	if ns := ins.Container.NetworkSettings; ns != nil {
		for _, ep := range ns.Networks {
			if ep != nil && ep.IPAddress.IsValid() {
				iso.IP = ep.IPAddress.String()
				break
			}
		}
	}
	return iso, nil
}

// DestroyNetwork implements drivers.NetworkManager: the alloc's pause
// container is removed, if there is one.
func (d *Driver) DestroyNetwork(ctx context.Context, allocID string) error {
	_, err := d.client.ContainerRemove(ctx, pauseName(allocID), client.ContainerRemoveOptions{Force: true})
	if err != nil && !cerrdefs.IsNotFound(err) {
		return fmt.Errorf("remove the alloc's pause container: %w", err)
	}
	return nil
}

// pauseImage is the image drover builds for pause containers when the
// agent names none (Nomad's infra_image, which is pulled from a registry):
// one static executable that waits for ever, so no registry is needed.
const pauseImage = "drover/pause:1"

// infraMu serializes building the pause image.
var infraMu sync.Mutex

// ensureInfraImage returns the pause containers' image: the agent's
// DockerInfraImage (pulled when absent), or drover's own, imported into
// the engine on first use.
func (d *Driver) ensureInfraImage(ctx context.Context) (string, error) {
	if ref := d.opts.DockerInfraImage; ref != "" {
		if _, err := d.client.ImageInspect(ctx, ref); err == nil {
			return ref, nil
		}
		if err := d.pull(ctx, ref, ""); err != nil {
			return "", fmt.Errorf("pull the infra image %s: %w", ref, err)
		}
		return ref, nil
	}
	infraMu.Lock()
	defer infraMu.Unlock()
	if _, err := d.client.ImageInspect(ctx, pauseImage); err == nil {
		return pauseImage, nil
	} else if !cerrdefs.IsNotFound(err) {
		return "", fmt.Errorf("inspect image %s: %w", pauseImage, err)
	}
	bin, err := pauseBinary(runtime.GOARCH)
	if err != nil {
		return "", err
	}
	var layer bytes.Buffer
	tw := tar.NewWriter(&layer)
	if err := tw.WriteHeader(&tar.Header{Name: "pause", Mode: 0o755, Size: int64(len(bin)), Typeflag: tar.TypeReg}); err != nil {
		return "", err
	}
	if _, err := tw.Write(bin); err != nil {
		return "", err
	}
	if err := tw.Close(); err != nil {
		return "", err
	}
	res, err := d.client.ImageImport(ctx, client.ImageImportSource{Source: &layer, SourceName: "-"}, pauseImage,
		client.ImageImportOptions{Changes: []string{`ENTRYPOINT ["/pause"]`}, Message: "drover pause container"})
	if err != nil {
		return "", fmt.Errorf("import the pause image: %w", err)
	}
	defer res.Close()
	if _, err := d.client.ImageInspect(ctx, pauseImage); err != nil {
		return "", fmt.Errorf("the imported pause image: %w", err)
	}
	return pauseImage, nil
}

// pauseBinary returns a static Linux executable for arch that blocks in
// the kernel for ever, restarting after any signal it survives: a
// 64-bit ELF header, one loadable segment, and a loop around pause(2)
// (amd64) or ppoll(2) with no descriptors and no timeout (arm64, which has
// no pause). As PID 1 of its namespace it ignores SIGTERM; Docker kills
// it when the container is removed.
func pauseBinary(arch string) ([]byte, error) {
	var machine uint16
	var code []byte
	switch arch {
	case "amd64":
		machine = 62 // EM_X86_64
		code = []byte{
			0xb8, 0x22, 0x00, 0x00, 0x00, // mov eax, 34 (pause)
			0x0f, 0x05, // syscall
			0xeb, 0xf7, // jmp back to the mov
		}
	case "arm64":
		machine = 183 // EM_AARCH64
		for _, ins := range []uint32{
			0xd2800000, // mov x0, #0 (no descriptors)
			0xd2800001, // mov x1, #0
			0xd2800002, // mov x2, #0 (no timeout)
			0xd2800003, // mov x3, #0 (no signal mask)
			0xd2800928, // mov x8, #73 (ppoll)
			0xd4000001, // svc #0
			0x17fffffa, // b back to the first mov
		} {
			code = binary.LittleEndian.AppendUint32(code, ins)
		}
	default:
		return nil, fmt.Errorf("bridge networking: no pause program for %s; set the agent's -docker-infra-image", arch)
	}
	const base, ehsize, phsize = 0x400000, 64, 56
	size := uint64(ehsize + phsize + len(code))
	le := binary.LittleEndian
	b := make([]byte, 0, size)
	b = append(b, 0x7f, 'E', 'L', 'F', 2 /* 64-bit */, 1 /* little endian */, 1 /* version */, 0 /* System V */)
	b = append(b, make([]byte, 8)...)
	b = le.AppendUint16(b, 2) // ET_EXEC
	b = le.AppendUint16(b, machine)
	b = le.AppendUint32(b, 1)                  // version
	b = le.AppendUint64(b, base+ehsize+phsize) // entry
	b = le.AppendUint64(b, ehsize)             // program headers
	b = le.AppendUint64(b, 0)                  // no section headers
	b = le.AppendUint32(b, 0)                  // flags
	b = le.AppendUint16(b, ehsize)             // header size
	b = le.AppendUint16(b, phsize)             // program header size
	b = le.AppendUint16(b, 1)                  // one program header
	b = le.AppendUint16(b, 0)                  // section header size
	b = le.AppendUint16(b, 0)                  // no sections
	b = le.AppendUint16(b, 0)                  // no section names
	b = le.AppendUint32(b, 1)                  // PT_LOAD
	b = le.AppendUint32(b, 5)                  // read + execute
	b = le.AppendUint64(b, 0)                  // from the file's start
	b = le.AppendUint64(b, base)               // virtual address
	b = le.AppendUint64(b, base)               // physical address
	b = le.AppendUint64(b, size)               // file size
	b = le.AppendUint64(b, size)               // memory size
	b = le.AppendUint64(b, 0x1000)             // alignment
	return append(b, code...), nil
}
