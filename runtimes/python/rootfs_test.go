package python

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
)

// TestPathsAsOnLinux runs, in the interpreter, what code expects of paths
// on Linux (issue 32): /dev/null opens for reading (empty) and writing
// (discarded); a path the sandbox does not hold does not exist; / and the
// directories above the mounts list and stat, and show only what the
// sandbox holds. Before rootFS each of these failed with ENOTCAPABLE
// (errno 76, raised as PermissionError).
func TestPathsAsOnLinux(t *testing.T) {
	tests := []struct {
		name string
		code string
		want string // the result, as JSON
	}{
		{"/dev/null written", `import os
f = open(os.devnull, 'w'); n = f.write('x' * 100000); f.close()
fd = os.open('/dev/null', os.O_WRONLY | os.O_APPEND); m = os.write(fd, b'abc'); os.close(fd)
[n, m, os.stat('/dev/null').st_size]`, `[100000, 3, 0]`},
		{"/dev/null read", `import os
[open(os.devnull).read(), len(open('/dev/null', 'rb').read()), open('/dev/null', 'r+').read(5)]`, `["", 0, ""]`},
		{"/dev/null is a character device", `import os, stat
st = os.stat('/dev/null'); [stat.S_ISCHR(st.st_mode), os.path.isfile('/dev/null'), os.path.exists('/dev/null')]`,
			`[true, false, true]`},
		{"logging to /dev/null, as pytest does", `import logging, os
h = logging.FileHandler(os.devnull); log = logging.getLogger('t'); log.addHandler(h); log.warning('x' * 1000); h.close(); 'ok'`, `"ok"`},
		{"subprocess-style redirection", `import os, contextlib
with open(os.devnull, 'w') as null, contextlib.redirect_stdout(null):
    print('not shown')
'ok'`, `"ok"`},
		{"a missing path does not exist", `import os, pathlib, errno
out = [pathlib.Path('/nonexistent').exists(), os.path.exists('/etc/passwd'), pathlib.Path('/nonexistent/x').is_file()]
for p in ['/nonexistent/x', '/etc', '/usr/bin/python3', '/dev/zero', '/usr/local/x']:
    try:
        os.stat(p)
        out.append('found ' + p)
    except FileNotFoundError as e:
        out.append(errno.errorcode[e.errno])
out`, `[false, false, false, "ENOENT", "ENOENT", "ENOENT", "ENOENT", "ENOENT"]`},
		{"a path through /dev/null", `import os, errno
def stat(p):
    try:
        os.stat(p)
    except OSError as e:
        return type(e).__name__
[stat('/dev/null/x'), os.path.exists('/dev/null/x')]`, `["NotADirectoryError", false]`},
		{"/ lists what the sandbox holds", `import os, stat
[sorted(os.listdir('/')), sorted(os.listdir('/dev')), sorted(os.listdir('/usr')), sorted(os.listdir('/usr/local')),
 sorted(os.listdir('/usr/local/lib')), stat.S_ISDIR(os.stat('/').st_mode), os.path.isdir('/usr/share')]`,
			`[["dev", "tmp", "usr"], ["null"], ["lib", "local", "share"], ["lib"], ["python3.11"], true, true]`},
		{"scandir of / gives each entry's type", `import os
sorted((e.name, e.is_dir(), e.is_file()) for e in os.scandir('/dev'))`, `[["null", false, false]]`},
		{"walking down from /", `import os
[d for d, _, _ in os.walk('/usr/share') if d.count('/') < 4]`, `["/usr/share", "/usr/share/zoneinfo"]`},
		{".. across mounts", `import os
open('/tmp/t.txt', 'w').write('t')
[sorted(os.listdir('/usr/..')) == sorted(os.listdir('/')), os.path.exists('/tmp/../dev/null'), os.path.samefile('/usr/local/..', '/usr'),
 open('/usr/local/lib/python3.11/../../../../tmp/t.txt').read(), os.path.exists('/tmp/../etc/passwd')]`, `[true, true, true, "t", false]`},
		{"nothing above the mounts can be made", `import os, errno
out = []
for f in [lambda: open('/x', 'w'), lambda: os.mkdir('/usr/x'), lambda: os.mkdir('/nope/x'), lambda: os.rmdir('/usr'),
          lambda: os.unlink('/dev/null'), lambda: os.mkdir('/dev'), lambda: open('/nope/x', 'w')]:
    try:
        f()
        out.append('done')
    except OSError as e:
        out.append(errno.errorcode[e.errno])
out`, `["EROFS", "EROFS", "ENOENT", "EROFS", "EROFS", "EEXIST", "ENOENT"]`},
		{"through a descriptor of /", `import os
fd = os.open('/', os.O_RDONLY)
w = os.open('tmp/w.txt', os.O_CREAT | os.O_WRONLY, dir_fd=fd); os.write(w, b'via /'); os.close(w)
usr = os.open('usr', os.O_RDONLY, dir_fd=fd)
out = [open('/tmp/w.txt').read(), os.stat('usr/local/lib/python3.11/os.py', dir_fd=fd).st_size > 0,
       os.stat('local/lib/python3.11/os.py', dir_fd=usr).st_size > 0, os.path.exists('/tmp/../tmp/w.txt')]
os.close(usr); os.close(fd)
out`, `["via /", true, true, true]`},
		{"imports and the scratch directory as before", `import os, json, zoneinfo
open('a.txt', 'w').write('x')
[os.getcwd(), os.listdir('/tmp'), zoneinfo.ZoneInfo('Europe/Paris').key, json.dumps(1)]`,
			`["/tmp", ["a.txt", "outputs"], "Europe/Paris", "1"]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := run(t, defaultLimit, tt.code, nil)
			if r.Error != nil {
				t.Fatalf("error %+v\nstderr: %s", *r.Error, r.stderr)
			}
			if string(r.Result) != tt.want {
				t.Fatalf("result %s, want %s", r.Result, tt.want)
			}
		})
	}
}

// TestRootRevealsNoHostPath tries to reach the host's files through /, its
// made-up directories, /dev/null and ".." (issue 32): the host's own
// directories (this test's working directory, a temporary directory with a
// secret in it, /etc, /proc) are not there by any of those paths, and
// nothing reachable outside the mounts is anything but rootFS's own.
func TestRootRevealsNoHostPath(t *testing.T) {
	secretDir := t.TempDir()
	secret := "capsule-root-secret-" + strconv.Itoa(os.Getpid())
	if err := os.WriteFile(filepath.Join(secretDir, secret), []byte(secret), 0o644); err != nil {
		t.Fatal(err)
	}
	cwd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	hostPaths := []string{
		secretDir, filepath.Join(secretDir, secret), cwd, filepath.Join(cwd, "rootfs.go"), "/etc/passwd", "/etc/hostname",
		"/proc/self/environ", "/proc/self/cwd", "/proc/self/root/etc/passwd", "/root", "/home", "/sys", "/bin/sh",
		"/../../etc/passwd", "/dev/../etc/passwd", "/dev/null/../../etc/passwd", "/usr/../../../etc/passwd",
		"/usr/local/../../../proc/self/environ", "/tmp/../etc/passwd", "/tmp/../../proc/self/cwd",
		"/usr/share/zoneinfo/../../../etc/passwd", "/usr/local/lib/python3.11/../../../../etc/passwd",
	}
	paths, _ := json.Marshal(hostPaths)
	code := `import os
paths = ` + string(paths) + `
reached = []
for p in paths:
    for probe in (os.stat, os.listdir, lambda p: open(p, 'rb').read(1)):
        try:
            probe(p)
            reached.append(p)
        except (FileNotFoundError, NotADirectoryError):
            pass
        except PermissionError as e:
            if '..' not in p:
                reached.append('%s: %s' % (p, e))
        except OSError as e:
            reached.append('%s: errno %d' % (p, e.errno))
fd = os.open('/', os.O_RDONLY)
for rel in ['../etc/passwd', '../../proc/self/environ', 'dev/../../etc/hostname', 'etc']:
    try:
        os.stat(rel, dir_fd=fd)
        reached.append('dir_fd ' + rel)
    except FileNotFoundError:
        pass
    except PermissionError:
        if '..' not in rel:
            reached.append('dir_fd ' + rel)
mounts = {'/tmp', '/usr/local/lib/python3.11', '/usr/share/zoneinfo', '/usr/lib/python3/dist-packages'}
seen = []
for d, dirs, files in os.walk('/'):
    dirs[:] = [x for x in dirs if os.path.join(d, x) not in mounts]
    seen += [os.path.join(d, x) for x in dirs + files]
[reached, sorted(seen)]`
	r := run(t, defaultLimit, code, nil)
	if r.Error != nil {
		t.Fatalf("error %+v\nstderr: %s", *r.Error, r.stderr)
	}
	var got [2][]string
	if err := json.Unmarshal(r.Result, &got); err != nil {
		t.Fatalf("result %s: %v", r.Result, err)
	}
	if len(got[0]) != 0 {
		t.Errorf("host paths reached: %q", got[0])
	}
	want := "/dev /dev/null /usr /usr/lib /usr/lib/python3 /usr/local /usr/local/lib /usr/share"
	if strings.Join(got[1], " ") != want {
		t.Errorf("outside the mounts the guest sees %q, want %q", got[1], want)
	}
	if strings.Contains(string(r.Result)+r.stdout+r.stderr, secret) {
		t.Errorf("the secret's name reached the guest")
	}
}

// TestRootFS checks rootFS's answers directly, for what the interpreter
// seldom asks: where each path leads, and the errors for changing what is
// not in a mount.
func TestRootFS(t *testing.T) {
	files := &guestFiles{}
	scratch := newScratchFS(1<<20, files)
	if errno := scratch.Mkdir("d", 0o755); errno != 0 {
		t.Fatal(errno)
	}
	other := newScratchFS(1<<20, files)
	r := newRootFS(map[string]experimentalsys.FS{"/tmp": scratch, "/usr/share/zoneinfo": other}, files)

	stats := []struct {
		path  string
		errno experimentalsys.Errno
		dir   bool
	}{
		{"", 0, true}, {".", 0, true}, {"/", 0, true}, {"..", 0, true}, {"usr", 0, true}, {"usr/share", 0, true},
		{"usr/share/zoneinfo", 0, true}, {"tmp", 0, true}, {"tmp/d", 0, true}, {"tmp/../tmp/d", 0, true},
		{"dev", 0, true}, {"dev/null", 0, false}, {"dev/null/", experimentalsys.ENOTDIR, false},
		{"dev/null/x", experimentalsys.ENOTDIR, false}, {"etc", experimentalsys.ENOENT, false},
		{"../../etc/passwd", experimentalsys.ENOENT, false}, {"usr/local", experimentalsys.ENOENT, false},
		{"tmp/nope", experimentalsys.ENOENT, false}, {"usr/x/y", experimentalsys.ENOENT, false},
	}
	for _, tt := range stats {
		st, errno := r.Stat(tt.path)
		if errno != tt.errno || (errno == 0 && st.Mode.IsDir() != tt.dir) {
			t.Errorf("Stat(%q) = %v, %v; want dir %t, %v", tt.path, st.Mode, errno, tt.dir, tt.errno)
		}
	}

	changes := []struct {
		name string
		op   func() experimentalsys.Errno
		want experimentalsys.Errno
	}{
		{"mkdir /x", func() experimentalsys.Errno { return r.Mkdir("x", 0o755) }, experimentalsys.EROFS},
		{"mkdir /usr", func() experimentalsys.Errno { return r.Mkdir("usr", 0o755) }, experimentalsys.EEXIST},
		{"mkdir /nope/x", func() experimentalsys.Errno { return r.Mkdir("nope/x", 0o755) }, experimentalsys.ENOENT},
		{"mkdir /tmp/e", func() experimentalsys.Errno { return r.Mkdir("tmp/e", 0o755) }, 0},
		{"rmdir /usr", func() experimentalsys.Errno { return r.Rmdir("usr") }, experimentalsys.EROFS},
		{"unlink /dev/null", func() experimentalsys.Errno { return r.Unlink("dev/null") }, experimentalsys.EROFS},
		{"chmod /", func() experimentalsys.Errno { return r.Chmod("", 0o777) }, experimentalsys.EROFS},
		{"symlink /l", func() experimentalsys.Errno { return r.Symlink("/tmp", "l") }, experimentalsys.EROFS},
		{"rename /usr", func() experimentalsys.Errno { return r.Rename("usr", "tmp/usr") }, experimentalsys.EROFS},
		{"rename within /tmp", func() experimentalsys.Errno { return r.Rename("tmp/e", "tmp/f") }, 0},
		// EXDEV has no name in wazero's errors: the file systems hand it
		// over as EIO, and withFileErrno puts it back.
		{"rename across mounts", func() experimentalsys.Errno { return r.Rename("tmp/f", "usr/share/zoneinfo/f") }, experimentalsys.EIO},
		{"rename out of the mounts", func() experimentalsys.Errno { return r.Rename("tmp/f", "f") }, experimentalsys.EIO},
		{"create /x", func() experimentalsys.Errno {
			_, errno := r.OpenFile("x", experimentalsys.O_CREAT|experimentalsys.O_WRONLY, 0o644)
			return errno
		}, experimentalsys.EROFS},
		{"write /", func() experimentalsys.Errno {
			_, errno := r.OpenFile("", experimentalsys.O_WRONLY, 0)
			return errno
		}, experimentalsys.EISDIR},
		{"create /dev/null exclusively", func() experimentalsys.Errno {
			_, errno := r.OpenFile("dev/null", experimentalsys.O_CREAT|experimentalsys.O_EXCL|experimentalsys.O_WRONLY, 0o644)
			return errno
		}, experimentalsys.EEXIST},
	}
	for _, tt := range changes {
		files.pending.Store(0)
		if errno := tt.op(); errno != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, errno, tt.want)
		}
		if tt.want == experimentalsys.EIO && files.pending.Load() != errnoXdev {
			t.Errorf("%s: WASI errno %d, want EXDEV (%d)", tt.name, files.pending.Load(), errnoXdev)
		}
	}

	f, errno := r.OpenFile("", experimentalsys.O_RDONLY, 0)
	if errno != 0 {
		t.Fatal(errno)
	}
	var names []string
	for {
		dirents, errno := f.Readdir(1)
		if errno != 0 || len(dirents) == 0 {
			break
		}
		names = append(names, dirents[0].Name)
	}
	f.Close()
	if strings.Join(names, " ") != "dev tmp usr" {
		t.Errorf("/ lists %q", names)
	}

	null, errno := r.OpenFile("dev/null", experimentalsys.O_RDWR|experimentalsys.O_CREAT|experimentalsys.O_TRUNC, 0)
	if errno != 0 {
		t.Fatal(errno)
	}
	if n, errno := null.Write(make([]byte, 1<<20)); n != 1<<20 || errno != 0 {
		t.Errorf("write: %d, %v", n, errno)
	}
	if n, errno := null.Read(make([]byte, 10)); n != 0 || errno != 0 {
		t.Errorf("read: %d, %v", n, errno)
	}
	if st, _ := null.Stat(); st.Size != 0 || st.Mode&os.ModeCharDevice == 0 {
		t.Errorf("stat %+v", st)
	}
	if n := files.open.Load(); n != 1 {
		t.Errorf("%d files open, want 1 (/dev/null)", n)
	}
	null.Close()
	null.Close()
	if n := files.open.Load(); n != 0 {
		t.Errorf("%d files open after closing", n)
	}
}
