package main

import "testing"

func TestListeningAddr(t *testing.T) {
	cases := []struct{ name, log, want string }{
		{"not yet", `{"@level":"info","@message":"limits","max_concurrency":2}` + "\n", ""},
		{"listening", `{"@level":"info","@message":"limits"}` + "\n" +
			`{"@level":"info","@message":"listening","addr":"127.0.0.1:41234","endpoint":"/mcp"}` + "\n", "127.0.0.1:41234"},
		{"a line cut short", `{"@level":"info","@message":"listening","addr":"127.0.0.1:4`, ""},
		{"text log", "2026-12-04T20:00:00Z [INFO]  capsule: listening: addr=127.0.0.1:41234\n", ""},
	}
	for _, c := range cases {
		if got := listeningAddr(c.log); got != c.want {
			t.Errorf("%s: listeningAddr = %q, want %q", c.name, got, c.want)
		}
	}
}
