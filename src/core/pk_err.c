/* pk_err: text and names for the codes listed in pk_err.h. */
#include "pk_err.h"

const char *pk_strerror(int err)
{
    switch (err) {
    case PK_OK:
        return "success";
#define PK__ERR_TEXT(name, code, text)                                         \
    case PK_##name:                                                            \
        return text;
        PK_ERRNO_MAP(PK__ERR_TEXT)
#undef PK__ERR_TEXT
    }
    return "unknown error";
}

const char *pk_errname(int err)
{
    switch (err) {
    case PK_OK:
        return "PK_OK";
#define PK__ERR_NAME(name, code, text)                                         \
    case PK_##name:                                                            \
        return "PK_" #name;
        PK_ERRNO_MAP(PK__ERR_NAME)
#undef PK__ERR_NAME
    }
    return "PK_EUNKNOWN";
}
