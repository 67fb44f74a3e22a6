/* krn_interrupt: Ctrl-C for the code a cell runs, from SIGINT (the manager's
 * interrupt_kernel) or from interrupt_request on the control channel.
 *
 * Owns the SIGINT handler, the number of the run under way, and the thread
 * that wakes the main thread again after an interrupt. krn_py marks where
 * user code runs (main thread); krn_server asks for interrupts (any thread). */
#ifndef KRN_INTERRUPT_H
#define KRN_INTERRUPT_H

#include <stdbool.h>
#include <stddef.h>

/* On the main thread, the one interrupted, after Python is up: our SIGINT
 * handler replaces Python's, which would queue KeyboardInterrupt while idle. */
int krn_interrupt_init(char *err, size_t errlen);

/* Brackets a run of user code; an interrupt outside one does nothing. */
void krn_interrupt_run_begins(void);
void krn_interrupt_run_ends(void);
bool krn_interrupt_busy(void);

/* Interrupts the run under way, if any. */
void krn_interrupt_request(void);

#endif
