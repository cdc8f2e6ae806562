/*
Adversarial control: asm_include_macro   (compile stage: a host file read by the assembler
through routes the screen did not see; issue 35)

Attack. asm_incbin_passwd writes the directive in an asm(...) literal, which the screen
reads. Here the directive never stands in an asm literal: (1) a macro holds the string and
asm(S) names only the macro; (2) stringification spells `.include "..."` from code tokens;
(3) `.irp` substitutes "clude" into `.in\d`, so the word ".include" appears nowhere. GNU as
then opens the file, fails to assemble its lines, and quotes each one in its errors, which
went into build.errors and the record's message: files planted in /opt and /usr/local came
back line by line, and "Permission denied" against "No such file or directory" told which
host paths exist. The file named here is one every Debian host has, outside the build's
readable folders since issue 35.

Old harness: COMPILE_ERROR with the license's lines in build.log and build.errors.
Now: REJECTED by the screen (line 25: a string literal holding .include; asm(S) and
asm(STR(...)) are "computed asm"; .irp is an assembler macro). Past the screen, the build
would still fail to open the file (Landlock reads only the toolkit, /usr/include, gcc's
folder, the programs and libraries), with one phrase for a missing or an unreadable path.
*/
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#define STR(x) #x
#define S ".include \"/usr/share/common-licenses/GPL-3\""

asm(S);
asm(STR(.include "/usr/share/common-licenses/GPL-3"));
asm(".irp d,clude\n.in\\d \"/usr/share/common-licenses/GPL-3\"\n.endr\n");

__global__ void noop(__nv_bfloat16* c) { c[0] = c[0]; }

extern "C" int run(const __nv_bfloat16* A, const __nv_bfloat16* B, __nv_bfloat16* C, int M, int N,
                   int K, cudaStream_t stream) {
  noop<<<1, 1, 0, stream>>>(C);
  return 0;
}
