/*
 * sqlite-wasi.h is force-included (-include) into the sqlite3 amalgamation
 * when it is compiled for wasm32-wasi. sqlite's unix VFS uses a few POSIX
 * calls and constants that wasi-libc does not provide; this supplies them.
 *
 * Locking: a guest is one process, alone with its private scratch file
 * system, so no other process can ever hold a lock on its files. sqlite's
 * "unix" VFS keeps the locks of every connection of the process in its
 * own tables (unixInodeInfo, keyed by the file's device and inode) and
 * asks fcntl only about other processes; here fcntl's advisory locks are
 * always granted and F_GETLK finds none, so connections of one call lock
 * each other exactly as on Linux ("database is locked"), while the
 * lock-less "unix-none" VFS let a second connection write under another's
 * BEGIN EXCLUSIVE.
 */
#ifndef CAPSULE_SQLITE_WASI_H
#define CAPSULE_SQLITE_WASI_H

#include <sys/types.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <unistd.h>

/* No owners or permission bits under WASI: succeed without doing anything. */
static inline int capsule_fchmod(int fd, mode_t mode) { (void)fd; (void)mode; return 0; }
static inline int capsule_fchown(int fd, uid_t uid, gid_t gid) { (void)fd; (void)uid; (void)gid; return 0; }
static inline uid_t capsule_geteuid(void) { return 0; }
#define fchmod capsule_fchmod
#define fchown capsule_fchown
#define geteuid capsule_geteuid

/* Advisory-lock constants, which wasi-libc leaves out. */
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

/* fcntl with the advisory locks of a process that is alone (see above);
 * every other command is wasi-libc's. */
static int capsule_fcntl(int fd, int cmd, ...) {
	va_list ap;
	va_start(ap, cmd);
	intptr_t arg = va_arg(ap, intptr_t);
	va_end(ap);
	switch (cmd) {
	case F_SETLK:
	case F_SETLKW:
		return 0;
	case F_GETLK:
		((struct flock *)arg)->l_type = F_UNLCK;
		return 0;
	}
	return fcntl(fd, cmd, arg);
}
#define fcntl capsule_fcntl

#endif
