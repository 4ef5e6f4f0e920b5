package survival

import (
	"github.com/kci-dev/kci/suite/caps"
	"github.com/kci-dev/kci/wire"
)

// Outcomes of a survival cell.
const (
	survives = "survives"
	lost     = "lost"
	skip     = "skip"
	errored  = "error"
)

// carrierDef is a row of the survival matrix: how metadata rides along.
type carrierDef struct {
	name     string
	writer   string // program in bpf.Survive
	reader   string
	xdp      bool // the writer is generic XDP at the path's first receive point
	requires []caps.Requirement
}

func carriers() []carrierDef {
	return []carrierDef{
		{name: "skb-ext", writer: "surv_ext_write", reader: "surv_ext_read",
			requires: []caps.Requirement{caps.Kfunc("bpf_dynptr_from_skb_ext"), caps.Kfunc("bpf_dynptr_slice"), caps.Kfunc("bpf_dynptr_slice_rdwr")}},
		{name: "skb-ptr-map", writer: "surv_map_write", reader: "surv_map_read"},
		{name: "skb-mark", writer: "surv_mark_write", reader: "surv_mark_read"},
		{name: "xdp-meta", writer: "surv_xdp_write", reader: "surv_xdp_read", xdp: true,
			requires: []caps.Requirement{caps.XDPHelper("bpf_xdp_adjust_meta")}},
	}
}

type outcome struct {
	expected string
	reason   string // the kernel's reason, cited in the cell
}

// stockOutcomes is what stock Linux 6.12 does to each carrier on each
// path (writer just before the path's mechanism, reader at the final
// tc ingress; see topo.go). The BPF skb extension is not here: where the
// kernel has it, it must survive everything (below).
var stockOutcomes = map[[2]string]outcome{
	// The map is keyed by the skb's address: it survives wherever the
	// same struct sk_buff travels on, whatever happens to its fields.
	{"skb-ptr-map", "loopback"}:      {survives, "loopback_xmit hands the same skb to netif_rx"},
	{"skb-ptr-map", "veth"}:          {survives, "veth_xmit forwards the same skb to the peer (__dev_forward_skb)"},
	{"skb-ptr-map", "veth-netns"}:    {survives, "the same skb crosses; skb_scrub_packet clears fields, not the object"},
	{"skb-ptr-map", "redirect"}:      {survives, "bpf_redirect transmits the same skb on the target, veth forwards it"},
	{"skb-ptr-map", "redirect-peer"}: {survives, "bpf_redirect_peer only switches skb->dev of the same skb"},
	{"skb-ptr-map", "ipip"}:          {survives, "ip_tunnel_rcv decapsulates in place: the outer header is pulled off the same skb"},
	{"skb-ptr-map", "gre"}:           {survives, "ip_tunnel_rcv decapsulates in place: the outer header is pulled off the same skb"},
	{"skb-ptr-map", "forward"}:       {survives, "ip_forward sends the same skb on (skb_cow may move its data, not the skb)"},

	// skb->mark is cleared only by skb_scrub_packet(skb, xnet=true).
	{"skb-mark", "loopback"}:      {survives, "loopback does not scrub the skb"},
	{"skb-mark", "veth"}:          {survives, "same netns: skb_scrub_packet(xnet=false) keeps skb->mark"},
	{"skb-mark", "veth-netns"}:    {lost, "veth into another netns: skb_scrub_packet(xnet=true) clears skb->mark"},
	{"skb-mark", "redirect"}:      {lost, "the redirected skb leaves on vrb and crosses the veth into B: skb_scrub_packet(xnet=true)"},
	{"skb-mark", "redirect-peer"}: {survives, "skb_do_redirect with BPF_F_PEER scrubs with xnet=false, keeping skb->mark"},
	{"skb-mark", "ipip"}:          {survives, "ip_tunnel_rcv scrubs with xnet=false: the tunnel device is in the receiving netns"},
	{"skb-mark", "gre"}:           {survives, "ip_tunnel_rcv scrubs with xnet=false: the tunnel device is in the receiving netns"},
	{"skb-mark", "forward"}:       {lost, "the router's veth into B scrubs with xnet=true"},

	// data_meta is the meta_len bytes before skb->data at tc; only
	// pskb_expand_head clears meta_len, so it "survives" wherever the
	// bytes in front of the mac header are left alone.
	{"xdp-meta", "loopback"}:      {survives, "generic XDP on lo sets meta_len on the skb tc ingress sees next"},
	{"xdp-meta", "veth"}:          {survives, "generic XDP and the reader are on the same receive hook"},
	{"xdp-meta", "veth-netns"}:    {survives, "generic XDP and the reader are on the same receive hook"},
	{"xdp-meta", "redirect"}:      {survives, "bpf_redirect and veth neither move the mac header nor reallocate the head (headroom from generic XDP), so the bytes before it stay put"},
	{"xdp-meta", "redirect-peer"}: {survives, "bpf_redirect_peer leaves the data untouched"},
	{"xdp-meta", "ipip"}:          {lost, "decap moves skb->data past the outer headers: data_meta (data - meta_len) then points into the outer header"},
	{"xdp-meta", "gre"}:           {lost, "decap moves skb->data past the outer headers: data_meta (data - meta_len) then points into the outer header"},
	{"xdp-meta", "forward"}:       {survives, "ip_forward rewrites only the L2 header in place (headroom from generic XDP, no skb_cow copy)"},
}

// extReason is why the skb extension is expected everywhere it exists.
const extReason = "the BPF skb extension series keeps the extension through scrubbing (patch 03/14), redirects, forwarding and decap"

// expect declares a cell's outcome on a kernel that has what have says.
func expect(c carrierDef, p pathDef, have wire.Caps) outcome {
	if miss := caps.Missing(have, append(append([]caps.Requirement{}, c.requires...), p.requires...)); miss != "" {
		return outcome{skip, miss}
	}
	if c.name == "skb-ext" {
		return outcome{survives, extReason}
	}
	if o, ok := stockOutcomes[[2]string{c.name, p.name}]; ok {
		return o
	}
	return outcome{errored, "no expectation declared for this cell"}
}
