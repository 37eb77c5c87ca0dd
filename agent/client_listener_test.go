package agent

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestForwardKeyPersists: a server keeps its forward key across restarts
// (clients cache its public key), readable by its owner only.
func TestForwardKeyPersists(t *testing.T) {
	dir := t.TempDir()
	a, err := loadForwardSigner(dir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := loadForwardSigner(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.PublicKey(), b.PublicKey()) {
		t.Fatal("a new key at the second start")
	}
	fi, err := os.Stat(filepath.Join(dir, forwardKeyFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", fi, err)
	}
	other, err := loadForwardSigner(t.TempDir())
	if err != nil || bytes.Equal(other.PublicKey(), a.PublicKey()) {
		t.Fatalf("two servers share a key: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, forwardKeyFile), []byte("short"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := loadForwardSigner(dir); err == nil {
		t.Fatal("a damaged key was accepted")
	}
}
