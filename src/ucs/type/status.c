#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <ucs/type/status.h>

#include <stdio.h>

/* Table indexed by -status so lookup is one bounds check and one load. */
static const char *const ucs_status_texts[] = {
    [0]                           = "Success",
    [-UCS_ERR_NO_MESSAGE]         = "No pending message",
    [-UCS_ERR_NO_RESOURCE]        = "No resources are available to initiate the operation",
    [-UCS_ERR_IO_ERROR]           = "Input/output error",
    [-UCS_ERR_NO_MEMORY]          = "Out of memory",
    [-UCS_ERR_INVALID_PARAM]      = "Invalid parameter",
    [-UCS_ERR_UNREACHABLE]        = "Destination is unreachable",
    [-UCS_ERR_INVALID_ADDR]       = "Address not valid",
    [-UCS_ERR_NOT_IMPLEMENTED]    = "Function not implemented",
    [-UCS_ERR_MESSAGE_TRUNCATED]  = "Message truncated",
    [-UCS_ERR_NO_PROGRESS]        = "No progress",
    [-UCS_ERR_BUFFER_TOO_SMALL]   = "Provided buffer is too small",
    [-UCS_ERR_NO_ELEM]            = "No such element",
    [-UCS_ERR_SOME_CONNECTS_FAILED] = "Failed to connect some of the requested endpoints",
    [-UCS_ERR_NO_DEVICE]          = "No such device",
    [-UCS_ERR_BUSY]               = "Device is busy",
    [-UCS_ERR_CANCELED]           = "Request canceled",
    [-UCS_ERR_SHMEM_SEGMENT]      = "Shared memory error",
    [-UCS_ERR_ALREADY_EXISTS]     = "Element already exists",
    [-UCS_ERR_OUT_OF_RANGE]       = "Index out of range",
    [-UCS_ERR_TIMED_OUT]          = "Operation timed out",
    [-UCS_ERR_EXCEEDS_LIMIT]      = "User-defined limit was reached",
    [-UCS_ERR_UNSUPPORTED]        = "Unsupported operation",
    [-UCS_ERR_REJECTED]           = "Operation rejected by remote peer",
    [-UCS_ERR_NOT_CONNECTED]      = "Endpoint is not connected",
    [-UCS_ERR_CONNECTION_RESET]   = "Connection reset by remote peer",
    [-UCS_ERR_ENDPOINT_TIMEOUT]   = "Endpoint timeout",
};

const char *ucs_status_string(ucs_status_t status)
{
    /* Unknown codes get a per-thread buffer so the caller never sees NULL. */
    static __thread char unknown[64];
    int index = -(int)status;

    if (status == UCS_INPROGRESS) {
        return "Operation in progress";
    }

    if ((index >= 0) && (index < (int)ucs_static_array_size(ucs_status_texts)) &&
        (ucs_status_texts[index] != NULL)) {
        return ucs_status_texts[index];
    }

    if ((status <= UCS_ERR_FIRST_LINK_FAILURE) && (status >= UCS_ERR_LAST_LINK_FAILURE)) {
        return "Link failure";
    }

    if ((status <= UCS_ERR_FIRST_ENDPOINT_FAILURE) &&
        (status >= UCS_ERR_LAST_ENDPOINT_FAILURE)) {
        return "Endpoint failure";
    }

    snprintf(unknown, sizeof(unknown), "Unknown error %d", (int)status);
    return unknown;
}
