/**
 * @file callback.h
 * A progress callback: returns how many events it handled, so that a
 * progress loop can tell whether anything happened.
 */
#ifndef UCS_TYPE_CALLBACK_H_
#define UCS_TYPE_CALLBACK_H_

typedef unsigned (*ucs_callback_t)(void *arg);

#endif
