// Package testdev makes the devices the safety tests write beside: a loop device over a file of
// a known pattern (a decoy no tool may touch), and its sha256. It is for tests only; it lives
// outside a _test.go file because tests of several packages share it.
package testdev

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Loop attaches a new file of size bytes (a multiple of 512) in t.TempDir(), filled with pattern
// repeated (zeros when pattern is empty), to a free loop device, detached when t ends.
func Loop(t testing.TB, size int64, pattern string) string {
	t.Helper()
	img := filepath.Join(t.TempDir(), "disk.img")
	f, err := os.Create(img)
	if err != nil {
		t.Fatal(err)
	}
	if pattern != "" {
		chunk := bytes.Repeat([]byte(pattern), (1<<20)/len(pattern)+1)[:1<<20]
		for off := int64(0); off < size; off += int64(len(chunk)) {
			if _, err := f.Write(chunk[:min(int64(len(chunk)), size-off)]); err != nil {
				t.Fatal(err)
			}
		}
	} else if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	dev, err := attach(img)
	if err != nil {
		t.Fatalf("losetup %s: %v", img, err)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("losetup", "-d", dev).CombinedOutput(); err != nil {
			t.Errorf("losetup -d %s: %v: %s", dev, err, out)
		}
	})
	return dev
}

// attach binds img to a free loop device and returns its path. busybox's losetup (the emulated
// board's, where the jail's tests run too) has no --show: there it asks for the free device's
// name first, then binds it.
func attach(img string) (string, error) {
	if out, err := exec.Command("losetup", "--find", "--show", img).Output(); err == nil {
		return strings.TrimSpace(string(out)), nil
	}
	out, err := exec.Command("losetup", "-f").Output()
	if err != nil {
		return "", err
	}
	dev := strings.TrimSpace(string(out))
	if out, err := exec.Command("losetup", dev, img).CombinedOutput(); err != nil {
		return "", fmt.Errorf("%w: %s", err, out)
	}
	return dev, nil
}

// Sum is the sha256 of everything in path (a device or a file), in hex.
func Sum(t testing.TB, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}
