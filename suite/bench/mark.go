package bench

// The host's QEMU plugin (vm/tcgplugin) counts every instruction and
// memory access executed between two marker instructions: multi-byte NOPs
// whose displacement the plugin matches at translation time. A guest
// without the plugin executes them as NOPs. The bytes here and the
// plugin's constants must agree; TestMarkBytes checks that.
const (
	markStartDisp = 0x4b430001 // nopl 0x4b430001(%rax,%rax,1)
	markEndDisp   = 0x4b430002 // nopl 0x4b430002(%rax,%rax,1)
	markArmDisp   = 0x4b430003 // nopl 0x4b430003(%rax,%rax,1)
)

// marker numbers the exact-count windows the guest opens, in the order
// the plugin numbers them: every start marker executed is one window.
type marker struct{ next int }

// start executes the start marker and returns the window's index.
func (m *marker) start() int {
	markStart()
	m.next++
	return m.next - 1
}

// end executes the end marker.
func (m *marker) end() { markEnd() }

// arm executes the arm marker. kci's plugin instruments only what it
// must (arm=marker): a window, and with the cache model also from the arm
// marker to the next window's end, so the model's caches are warm at the
// window. Everything else (firmware, the kernel's boot, probes, loading
// programs) runs at TCG's own speed. The bench arms at its warm-up.
func (m *marker) arm() { markArm() }
