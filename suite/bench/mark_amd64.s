#include "textflag.h"

// The plugin's window markers (mark.go): nopl disp32(%rax,%rax,1), that
// is 0f 1f 84 00 and the displacement, little-endian.

// func markStart()
TEXT ·markStart(SB), NOSPLIT, $0-0
	BYTE $0x0f; BYTE $0x1f; BYTE $0x84; BYTE $0x00
	BYTE $0x01; BYTE $0x00; BYTE $0x43; BYTE $0x4b
	RET

// func markEnd()
TEXT ·markEnd(SB), NOSPLIT, $0-0
	BYTE $0x0f; BYTE $0x1f; BYTE $0x84; BYTE $0x00
	BYTE $0x02; BYTE $0x00; BYTE $0x43; BYTE $0x4b
	RET

// func markArm(): its RET ends the translation block, so the plugin's
// re-translation (a flush) takes effect before the next guest instruction.
TEXT ·markArm(SB), NOSPLIT, $0-0
	BYTE $0x0f; BYTE $0x1f; BYTE $0x84; BYTE $0x00
	BYTE $0x03; BYTE $0x00; BYTE $0x43; BYTE $0x4b
	RET
