package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sqliteLocking is Python that checks, on a database in /tmp, that
// connections of one call lock each other as on Linux: a writer's
// transaction keeps a second writer out ("database is locked") but not a
// reader, BEGIN EXCLUSIVE keeps both out, two readers share, and the
// locks go with commit and rollback. Before, with sqlite's lock-less VFS,
// the second connection wrote and committed under BEGIN EXCLUSIVE.
const sqliteLocking = `import sqlite3
path = '/tmp/locks.db'
a = sqlite3.connect(path, timeout=0.05)
b = sqlite3.connect(path, timeout=0.05)
a.execute('create table t(x)')
def locked(f):
    try:
        f()
    except sqlite3.OperationalError as e:
        assert 'database is locked' in str(e), e
        return True
    return False
# A write transaction: others may read the committed state, not write.
a.execute('insert into t values (1)')
assert b.execute('select count(*) from t').fetchone()[0] == 0
assert locked(lambda: b.execute('insert into t values (2)')), 'second writer got in'
a.commit()
b.execute('insert into t values (2)'); b.commit()
# BEGIN EXCLUSIVE: nobody else reads or writes.
a.isolation_level = None
a.execute('begin exclusive')
assert locked(lambda: b.execute('select * from t').fetchall()), 'reader got past an exclusive lock'
assert locked(lambda: (b.execute('insert into t values (3)'), b.commit())), 'writer got past an exclusive lock'
a.execute('rollback')
# Two readers at once, each in the middle of a query.
ca = a.execute('select x from t'); cb = b.execute('select x from t')
rows = (ca.fetchone(), cb.fetchone(), ca.fetchall(), cb.fetchall())
b.execute('insert into t values (3)'); b.commit()
a.execute('select count(*) from t').fetchone()[0]
`

// TestSQLiteLocksInScratch is issue 22's sqlite case: connections of one
// call lock each other on the scratch file system.
func TestSQLiteLocksInScratch(t *testing.T) {
	s := startServer(t)
	res, st := s.call(t, "execute_python", sqliteLocking)
	check(t, res, st, expectation{result: "3"})
}

// TestCPythonSQLiteTransactionTests runs CPython's own sqlite3 transaction
// and locking tests (Lib/test/test_sqlite3/test_transactions.py) in a call,
// from the CPython source the runtime build unpacked, with the few
// helpers of CPython's test.support they import given through
// --python-path. It skips when that source is not on this machine.
func TestCPythonSQLiteTransactionTests(t *testing.T) {
	cache := os.Getenv("CAPSULE_BUILD_CACHE")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache", "capsule-build")
	}
	src, err := os.ReadFile(filepath.Join(cache, "python", "work", "python3.11", "Lib", "test", "test_sqlite3", "test_transactions.py"))
	if err != nil {
		t.Skipf("CPython's test source is not here (%v): make build unpacks it", err)
	}
	dir := readableTempDir(t)
	files := map[string]string{
		"test/__init__.py":                       "",
		"test/support/__init__.py":               "LOOPBACK_TIMEOUT = 5.0\n",
		"test/support/os_helper.py":              "import os\nTESTFN = '@test_sqlite_tmp'\ndef unlink(p):\n    try:\n        os.unlink(p)\n    except FileNotFoundError:\n        pass\n",
		"test/test_sqlite3/__init__.py":          "",
		"test/test_sqlite3/test_dbapi.py":        "import contextlib, sqlite3\ndef memory_database(*a, **k):\n    return contextlib.closing(sqlite3.connect(':memory:', *a, **k))\n",
		"test/test_sqlite3/test_transactions.py": string(src),
	}
	for name, body := range files {
		p := filepath.Join(dir, "pkgs", name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s := startServer(t, "--python-path", filepath.Join(dir, "pkgs"), "--timeout", "60s")
	res, st := s.call(t, "execute_python", `import io, unittest
import test.test_sqlite3.test_transactions as m
out = io.StringIO()
r = unittest.TextTestRunner(stream=out, verbosity=2).run(unittest.defaultTestLoader.loadTestsFromModule(m))
print(out.getvalue())
[r.testsRun, len(r.failures), len(r.errors), len(r.skipped)]`)
	if st.Error != nil || !strings.HasSuffix(string(st.Result), ",0,0,0]") || !strings.Contains(st.Stdout, "test_locking") {
		t.Fatalf("CPython's sqlite3 transaction tests: result %s, error %+v\n%s%s", st.Result, st.Error, st.Stdout, text(res))
	}
	t.Logf("CPython's test_transactions: [run, failures, errors, skipped] = %s", st.Result)
}
