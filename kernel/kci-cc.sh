#!/bin/sh
# kci's compiler for kernel builds: ccache in depend mode, where a miss
# costs about what gcc alone does (the default mode preprocesses every
# file twice, 30-40 % more CPU on a cold build). Depend mode hashes the
# compiler's dependency list, which never names a file an assembler
# .incbin pulls in (the compressed kernel in piggy.S, the config in
# kernel/configs.c): a source that says incbin is compiled by gcc alone,
# or a cached object would carry another build's payload.
src=
for arg do
	case $arg in
	-*) ;;
	*.c | *.S | *.s) src=$arg ;;
	esac
done
if [ -n "$src" ] && grep -q incbin "$src" 2>/dev/null; then
	exec gcc "$@"
fi
unset CCACHE_NODEPEND
CCACHE_DEPEND=1
export CCACHE_DEPEND
exec ccache gcc "$@"
