package docker

import (
	"context"
	"fmt"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/pkg/authconfig"
	"github.com/moby/moby/api/types/registry"
	"github.com/moby/moby/client"

	"github.com/drover-sched/drover/drivers"
)

// ensureImage makes sure the task's image is present, pulling it when it
// is absent or force_pull is set, and returns its ID. A failed pull is
// recoverable (the registry may come back), as in Nomad.
func (d *Driver) ensureImage(ctx context.Context, cfg *drivers.TaskConfig, tc *TaskConfig) (string, error) {
	if !tc.ForcePull {
		img, err := d.client.ImageInspect(ctx, tc.Image)
		if err == nil {
			return img.ID, nil
		}
		if !cerrdefs.IsNotFound(err) {
			return "", fmt.Errorf("inspect image %s: %w", tc.Image, err)
		}
	}
	cfg.Emit("Downloading image %s", tc.Image)
	timeout := tc.ImagePullTimeout
	if timeout <= 0 {
		timeout = DefaultImagePullTimeout
	}
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	auth, err := encodeAuth(tc.Auth)
	if err != nil {
		return "", drivers.Unrecoverable(err)
	}
	err = d.pull(pctx, tc.Image, auth)
	if err != nil && auth != "" && tc.AuthSoftFail {
		d.logger.Info("pull with auth failed, retrying without it (auth_soft_fail)", zapError(err))
		err = d.pull(pctx, tc.Image, "")
	}
	if err != nil {
		return "", fmt.Errorf("Failed to pull `%s`: %w", tc.Image, err)
	}
	img, err := d.client.ImageInspect(ctx, tc.Image)
	if err != nil {
		return "", fmt.Errorf("inspect pulled image %s: %w", tc.Image, err)
	}
	return img.ID, nil
}

func (d *Driver) pull(ctx context.Context, ref, auth string) error {
	resp, err := d.client.ImagePull(ctx, ref, client.ImagePullOptions{RegistryAuth: auth})
	if err != nil {
		return err
	}
	defer resp.Close()
	return resp.Wait(ctx)
}

// encodeAuth is the registry auth header for a, "" when a is empty.
func encodeAuth(a Auth) (string, error) {
	if a == (Auth{}) {
		return "", nil
	}
	s, err := authconfig.Encode(registry.AuthConfig{Username: a.Username, Password: a.Password, ServerAddress: a.ServerAddress})
	if err != nil {
		return "", fmt.Errorf("encode registry auth: %w", err)
	}
	return s, nil
}
