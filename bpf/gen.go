package bpf

// The objects are compiled once and committed (the .o next to its Go
// wrapper), so building kci needs no clang; TestRegenerate checks that the
// committed files still match the C sources.
//
// -I: Debian keeps asm/ under the multiarch include directory.

//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -target amd64 -cflags "-O2 -g -Wall -Werror -I/usr/include/x86_64-linux-gnu" cnt c/cnt.c
//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -target amd64 -cflags "-O2 -g -Wall -Werror -I/usr/include/x86_64-linux-gnu" ext c/ext.c
//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -target amd64 -cflags "-O2 -g -Wall -Werror -I/usr/include/x86_64-linux-gnu" gtp c/gtp.c
//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -target amd64 -cflags "-O2 -g -Wall -Werror -I/usr/include/x86_64-linux-gnu" gtplru c/gtplru.c
//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -target amd64 -cflags "-O2 -g -Wall -Werror -I/usr/include/x86_64-linux-gnu" hash c/hash.c
//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -target amd64 -cflags "-O2 -g -Wall -Werror -I/usr/include/x86_64-linux-gnu" lru c/lru.c
//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -target amd64 -cflags "-O2 -g -Wall -Werror -I/usr/include/x86_64-linux-gnu" survive c/survive.c
