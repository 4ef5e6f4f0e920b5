package kernel

import (
	"bytes"
	"compress/gzip"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
)

// bzImageBuildID reads the build id of the kernel a bzImage boots: its
// payload (boot protocol 2.08 and later) is the compressed vmlinux.bin,
// an ELF with vmlinux's notes. kci configures gzip (kci.config).
func bzImageBuildID(path string) (string, error) {
	img, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	payload, err := bzImagePayload(img)
	if err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(payload))
	if err != nil {
		return "", fmt.Errorf("%s: payload is not gzip (kci builds CONFIG_KERNEL_GZIP): %w", path, err)
	}
	zr.Multistream(false)
	bin, err := io.ReadAll(zr)
	if err != nil {
		return "", fmt.Errorf("%s: payload: %w", path, err)
	}
	f, err := elf.NewFile(bytes.NewReader(bin))
	if err != nil {
		return "", fmt.Errorf("%s: payload: %w", path, err)
	}
	for _, p := range f.Progs {
		if p.Type != elf.PT_NOTE {
			continue
		}
		data, err := io.ReadAll(p.Open())
		if err != nil {
			return "", fmt.Errorf("%s: payload notes: %w", path, err)
		}
		if id := noteBuildID(data, f.ByteOrder); id != "" {
			return id, nil
		}
	}
	return "", fmt.Errorf("%s: payload has no build id note", path)
}

// bzImagePayload cuts the compressed kernel out of a bzImage by its
// setup header (Documentation/arch/x86/boot.rst).
func bzImagePayload(img []byte) ([]byte, error) {
	if len(img) < 0x250 || string(img[0x202:0x206]) != "HdrS" {
		return nil, errors.New("not a bzImage (no HdrS setup header)")
	}
	if v := binary.LittleEndian.Uint16(img[0x206:]); v < 0x208 {
		return nil, fmt.Errorf("boot protocol %#x has no payload fields (2.08+)", v)
	}
	setup := int(img[0x1f1])
	if setup == 0 {
		setup = 4
	}
	start := (setup+1)*512 + int(binary.LittleEndian.Uint32(img[0x248:]))
	end := start + int(binary.LittleEndian.Uint32(img[0x24c:]))
	if start < 0 || end > len(img) || start >= end {
		return nil, fmt.Errorf("payload %d..%d outside the %d-byte image", start, end, len(img))
	}
	return img[start:end], nil
}
