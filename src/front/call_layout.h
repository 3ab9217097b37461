/* A call's arguments as the plans see them (call_layout.c): checks that
 * need no other rank, the two typed buffers and the layout. */
#ifndef NBR_CALL_LAYOUT_H
#define NBR_CALL_LAYOUT_H

#include "front/request.h"

/* Checks call's arguments and fills req's send and receive buffers and
 * layout (and, for an _ext call, its value indices): local work only. */
int nbr_call_describe(const nbr_call_t *call, const nbr_comm_t *state, nbr_request_t req);

/* Staged buffers get their own copy of the datatype(s) and a staging area
 * (dense ones: nothing to do). */
int nbr_typed_buffer_stage(nbr_typed_buffer_t *buf);
/* Where the plan's offsets start: the user's memory, or the staging area. */
char *nbr_typed_buffer_base(const nbr_typed_buffer_t *buf);

enum { NBR_PACK, NBR_UNPACK };
/* Moves a staged buffer's slots between the user's typed memory and the
 * staging area: NBR_PACK before a send, NBR_UNPACK after a receive. */
int nbr_typed_buffer_transfer(nbr_typed_buffer_t *buf, const nbr_slot_t *slots, MPI_Comm comm,
                              int direction);
void nbr_typed_buffer_free(nbr_typed_buffer_t *buf);

#endif
