package survival

import (
	"encoding/binary"
	"net"
	"net/netip"
	"testing"

	"github.com/kci-dev/kci/bpf"
)

func TestUDPFrame(t *testing.T) {
	src, _ := net.ParseMAC("02:00:00:00:00:01")
	dst, _ := net.ParseMAC("02:00:00:00:00:02")
	payload := trailer(bpf.SurvMagic, 0x1122334455667788)
	f := udpFrame(src, dst, netip.MustParseAddr("198.18.2.99"), netip.MustParseAddr("198.18.2.2"), 5000, 6000, payload)
	if len(f) != 14+20+8+16 {
		t.Fatalf("frame length %d", len(f))
	}
	if binary.BigEndian.Uint16(f[12:]) != 0x0800 || string(f[0:6]) != string(dst) {
		t.Error("bad ethernet header")
	}
	// A header with its checksum filled in sums to 0xffff, i.e. checks to 0.
	if c := ipChecksum(f[14:34]); c != 0 {
		t.Errorf("IPv4 header checksum does not verify: %#x", c)
	}
	if binary.BigEndian.Uint16(f[34+4:]) != 8+16 {
		t.Error("bad UDP length")
	}
	// The reader takes the last 16 bytes.
	tail := f[len(f)-16:]
	if binary.LittleEndian.Uint64(tail) != bpf.SurvMagic || binary.LittleEndian.Uint64(tail[8:]) != 0x1122334455667788 {
		t.Errorf("trailer %x", tail)
	}
}
