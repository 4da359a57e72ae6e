// libFuzzer's entry point for a program with a main of its own (LLVM 12 and
// later): it runs the fuzzer with the command line given, on `callback`.
// The library comes with `-sanitize=fuzzer`; nothing else is linked.
#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));
