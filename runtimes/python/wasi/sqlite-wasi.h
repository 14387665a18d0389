/*
 * sqlite-wasi.h is force-included (-include) into the sqlite3 amalgamation
 * when it is compiled for wasm32-wasi. sqlite's unix VFS uses a few POSIX
 * calls and constants that wasi-libc does not provide; the sandbox only ever
 * uses in-memory databases (there is no writable file system), so inert
 * stand-ins are enough to make it compile and link.
 */
#ifndef CAPSULE_SQLITE_WASI_H
#define CAPSULE_SQLITE_WASI_H

#include <sys/types.h>
#include <fcntl.h>
#include <unistd.h>

/* No owners or permission bits under WASI: succeed without doing anything. */
static inline int capsule_fchmod(int fd, mode_t mode) { (void)fd; (void)mode; return 0; }
static inline int capsule_fchown(int fd, uid_t uid, gid_t gid) { (void)fd; (void)uid; (void)gid; return 0; }
static inline uid_t capsule_geteuid(void) { return 0; }
#define fchmod capsule_fchmod
#define fchown capsule_fchown
#define geteuid capsule_geteuid

/* Advisory-lock constants; with the "unix-none" VFS they are never used at
 * run time, only referenced by code that must compile. */
#ifndef F_RDLCK
#define F_RDLCK 0
#endif
#ifndef F_WRLCK
#define F_WRLCK 1
#endif
#ifndef F_UNLCK
#define F_UNLCK 2
#endif
#ifndef F_GETLK
#define F_GETLK 5
#endif
#ifndef F_SETLK
#define F_SETLK 6
#endif
#ifndef F_SETLKW
#define F_SETLKW 7
#endif

#endif
