/*
 * pk_slice: a borrowed view of bytes.
 *
 * A slice never owns its bytes; whoever hands one out says until when they
 * stay valid.  Store functions that can answer "nothing" (Redis nil) set
 * ptr to NULL; an empty value has a non-NULL ptr and len 0.
 */
#ifndef PK_STORE_PK_SLICE_H
#define PK_STORE_PK_SLICE_H

#include <stddef.h>

typedef struct pk_slice {
    const void *ptr; /* borrowed; NULL means nil */
    size_t len;
} pk_slice;

#endif
