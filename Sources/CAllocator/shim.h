// The C library's allocator controls (glibc's malloc.h), which Swift's Glibc module leaves out.
#include <malloc.h>
