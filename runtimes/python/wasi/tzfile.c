/*
 * tzfile.c: the two functions musl's time zone code (src/time/__tz.c) needs
 * from the rest of musl to read a TZif file, which wasi-libc leaves out
 * along with the time zone code itself. build.sh compiles __tz.c from
 * Debian's wasi-libc source package as musl wrote it and links it, with this
 * file, into python.wasm, so that localtime(), mktime(), strftime("%Z") and
 * time.tzset() follow TZ as they do natively.
 *
 * musl maps the file; WASI has no mmap, so the file is read into memory
 * instead. The time zones are served read-only by the runtime at
 * /usr/share/zoneinfo (runtimes/python/fs.go), the first directory musl
 * searches; without TZ, musl tries /etc/localtime, which does not exist in
 * the sandbox, and local time is UTC.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The largest TZif file in tzdata is under 4 KiB; anything far larger is
 * not a time zone. */
#define TZFILE_MAX (1 << 20)

const unsigned char *__map_file(const char *path, size_t *size);
int __munmap(void *addr, size_t len);

const unsigned char *
__map_file(const char *path, size_t *size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	struct stat st;
	unsigned char *buf = 0;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 && st.st_size <= TZFILE_MAX) {
		size_t want = (size_t)st.st_size, n = 0;
		buf = malloc(want);
		while (buf && n < want) {
			ssize_t r = read(fd, buf + n, want - n);
			if (r <= 0) {
				free(buf);
				buf = 0;
				break;
			}
			n += (size_t)r;
		}
		if (buf)
			*size = n;
	}
	close(fd);
	return buf;
}

int
__munmap(void *addr, size_t len)
{
	(void)len;
	free(addr);
	return 0;
}

/*
 * strftime's %Z prints __tm_to_tzname(tm). musl's version (renamed
 * __musl_tm_to_tzname by build.sh) only trusts tm_zone pointers into its own
 * tables and prints "" for any other, so time.strftime('%Z', t), which hands
 * strftime CPython's own copy of the name, would print nothing. glibc, which
 * users' python3 runs on, prints tm_zone as given; so does this.
 */
const char *__musl_tm_to_tzname(const struct tm *tm);
const char *__tm_to_tzname(const struct tm *tm);

const char *
__tm_to_tzname(const struct tm *tm)
{
	return tm->__tm_zone ? tm->__tm_zone : __musl_tm_to_tzname(tm);
}
