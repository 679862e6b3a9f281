#!/usr/bin/env python3
"""Builds libcudatrace.so: a shim exporting every cu* entry point of the real driver, each a
three-instruction trampoline that appends the entry point's index to an in-memory log and jumps
to the real function, so the trace costs a few nanoseconds per call and changes no argument.
At exit the shim writes the calls, run-length encoded ("cuLaunchKernel x8"), to $CU_TRACE_OUT.

usage: make_trace_shim.py [REAL_LIBCUDA] [OUTPUT_DIR]
  (defaults: /usr/lib/x86_64-linux-gnu/libcuda.so.1, the current directory)
use:   LD_PRELOAD=.../libcudatrace.so CU_TRACE_OUT=trace.txt ./program        (linked to libcuda)
       CUDA_SAFE_LIBCUDA=.../libcudatrace.so CU_TRACE_OUT=trace.txt ./program (cuda-safe)
x86-64 only. Entry points returned by cuGetProcAddress are not traced.
"""
import os
import subprocess
import sys

real = sys.argv[1] if len(sys.argv) > 1 else "/usr/lib/x86_64-linux-gnu/libcuda.so.1"
out = sys.argv[2] if len(sys.argv) > 2 else "."
listing = subprocess.run(["nm", "-D", "--defined-only", real], capture_output=True, text=True, check=True)
names = sorted({line.split()[2].split("@")[0] for line in listing.stdout.splitlines()
                if len(line.split()) == 3 and line.split()[1] == "T" and line.split()[2].startswith("cu")})
assert 0 < len(names) < 65536
cap = 1 << 22

asm = [".text"]
for i, name in enumerate(names):
    asm += [f".globl {name}", f".type {name}, @function", f"{name}:", f"  movl ${i}, %eax", "  jmp trace_common"]
# rax (no variadic entry points) and r10/r11 are free at a call's entry in the SysV ABI.
asm += [
    "trace_common:",
    "  movq $1, %r11",
    "  lock xaddq %r11, trace_pos(%rip)",
    f"  cmpq ${cap}, %r11",
    "  jae 1f",
    "  leaq trace_log(%rip), %r10",
    "  movw %ax, (%r10,%r11,2)",
    "1:",
    "  leaq real_table(%rip), %r10",
    "  jmp *(%r10,%rax,8)",
    '.section .note.GNU-stack,"",@progbits',
]
c = f"""
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#define COUNT {len(names)}
#define CAP {cap}UL
__attribute__((visibility("hidden"))) unsigned long trace_pos;
__attribute__((visibility("hidden"))) unsigned short trace_log[CAP];
__attribute__((visibility("hidden"))) void* real_table[COUNT];
static const char* names[COUNT] = {{ {", ".join('"%s"' % n for n in names)} }};
static void missing(void) {{ fprintf(stderr, "libcudatrace: an entry point missing in the real driver was called\\n"); abort(); }}
__attribute__((constructor)) static void load(void) {{
  const char* path = getenv("CU_TRACE_REAL");
  void* real = dlopen(path ? path : "libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!real) {{ fprintf(stderr, "libcudatrace: %s\\n", dlerror()); abort(); }}
  for (int i = 0; i < COUNT; i++) {{ real_table[i] = dlsym(real, names[i]); if (!real_table[i]) real_table[i] = (void*)missing; }}
}}
__attribute__((destructor)) static void dump(void) {{
  const char* path = getenv("CU_TRACE_OUT");
  FILE* f = path ? fopen(path, "w") : stderr;
  if (!f) return;
  unsigned long n = trace_pos < CAP ? trace_pos : CAP;
  fprintf(f, "# %lu calls%s\\n", trace_pos, trace_pos > CAP ? " (log full: the first ones only)" : "");
  for (unsigned long i = 0; i < n;) {{
    unsigned long j = i;
    while (j < n && trace_log[j] == trace_log[i]) j++;
    if (j - i > 1) fprintf(f, "%s x%lu\\n", names[trace_log[i]], j - i); else fprintf(f, "%s\\n", names[trace_log[i]]);
    i = j;
  }}
  if (f != stderr) fclose(f);
}}
"""
with open(os.path.join(out, "trace_shim.S"), "w") as f:
    f.write("\n".join(asm) + "\n")
with open(os.path.join(out, "trace_shim.c"), "w") as f:
    f.write(c)
subprocess.run(["gcc", "-O2", "-shared", "-fPIC", "-o", os.path.join(out, "libcudatrace.so"),
                os.path.join(out, "trace_shim.c"), os.path.join(out, "trace_shim.S"), "-ldl"], check=True)
print(f"libcudatrace.so: {len(names)} entry points of {real}")
