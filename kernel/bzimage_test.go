package kernel

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBzImageBuildID wraps an ELF gcc links with a build id the way a
// bzImage holds vmlinux.bin, and reads the id back through the setup
// header; sameKernel takes it and refuses another id.
func TestBzImageBuildID(t *testing.T) {
	dir := t.TempDir()
	src, bin := filepath.Join(dir, "k.c"), filepath.Join(dir, "k.elf")
	mustWrite(t, src, "void _start(void) {}\n")
	if out, err := (command{}).run(context.Background(), "gcc", "-nostdlib", "-static", "-Wl,--build-id=sha1", "-o", bin, src); err != nil {
		t.Fatalf("gcc: %v: %s", err, out)
	}
	want, err := elfBuildID(bin)
	if err != nil {
		t.Fatal(err)
	}
	elfData, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	img := filepath.Join(dir, "bzImage")
	if err := os.WriteFile(img, fakeBzImage(t, elfData), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := bzImageBuildID(img)
	if err != nil || got != want {
		t.Fatalf("bzImageBuildID = %q, %v; want %q", got, err, want)
	}
	if err := sameKernel(img, want); err != nil {
		t.Errorf("sameKernel with its own id: %v", err)
	}
	if err := sameKernel(img, "00"+want[2:]); err == nil || !strings.Contains(err.Error(), "stale object") {
		t.Errorf("sameKernel with another id: %v, want a stale-object error", err)
	}
	if _, err := bzImageBuildID(bin); err == nil || !strings.Contains(err.Error(), "not a bzImage") {
		t.Errorf("an ELF read as a bzImage: %v, want \"not a bzImage\"", err)
	}
}

// fakeBzImage is a one-sector setup with a 2.15 header whose payload is
// payload, gzipped, after a few bytes of decompressor stand-in.
func fakeBzImage(t *testing.T, payload []byte) []byte {
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	if _, err := zw.Write(payload); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	img := make([]byte, 2*512+16)
	img[0x1f1] = 1
	copy(img[0x202:], "HdrS")
	binary.LittleEndian.PutUint16(img[0x206:], 0x20f)
	binary.LittleEndian.PutUint32(img[0x248:], 16)
	binary.LittleEndian.PutUint32(img[0x24c:], uint32(z.Len()))
	return append(append(img, z.Bytes()...), 0, 0, 0, 0) // trailing bytes: the decompressor's own
}
