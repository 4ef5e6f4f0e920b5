package survival

import (
	"encoding/binary"
	"net"
	"net/netip"
)

// udpFrame builds an Ethernet/IPv4/UDP frame (UDP checksum 0, which IPv4
// allows), for injecting packets where a socket would take another route.
func udpFrame(srcHW, dstHW net.HardwareAddr, src, dst netip.Addr, sport, dport uint16, payload []byte) []byte {
	const ethLen, ipLen, udpLen = 14, 20, 8
	f := make([]byte, ethLen+ipLen+udpLen+len(payload))
	copy(f[0:6], dstHW)
	copy(f[6:12], srcHW)
	binary.BigEndian.PutUint16(f[12:], 0x0800)
	ip := f[ethLen : ethLen+ipLen]
	ip[0] = 0x45
	binary.BigEndian.PutUint16(ip[2:], uint16(ipLen+udpLen+len(payload)))
	ip[8] = 64 // TTL
	ip[9] = 17 // UDP
	s4, d4 := src.As4(), dst.As4()
	copy(ip[12:16], s4[:])
	copy(ip[16:20], d4[:])
	binary.BigEndian.PutUint16(ip[10:], ipChecksum(ip))
	udp := f[ethLen+ipLen:]
	binary.BigEndian.PutUint16(udp[0:], sport)
	binary.BigEndian.PutUint16(udp[2:], dport)
	binary.BigEndian.PutUint16(udp[4:], uint16(udpLen+len(payload)))
	copy(udp[udpLen:], payload)
	return f
}

func ipChecksum(h []byte) uint16 {
	var sum uint32
	for i := 0; i+1 < len(h); i += 2 {
		sum += uint32(binary.BigEndian.Uint16(h[i:]))
	}
	for sum > 0xffff {
		sum = sum>>16 + sum&0xffff
	}
	return ^uint16(sum)
}

// trailer is a test packet's payload: {SurvMagic, token}, little-endian,
// as c/survive.c reads it from the end of the packet.
func trailer(magic, token uint64) []byte {
	b := make([]byte, 16)
	binary.LittleEndian.PutUint64(b[0:], magic)
	binary.LittleEndian.PutUint64(b[8:], token)
	return b
}
