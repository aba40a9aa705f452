package main

import (
	"strings"
	"testing"
)

func TestHelp(t *testing.T) {
	for _, cmd := range [][]string{{}, {"get"}, {"info"}, {"check"}, {"compact"}, {"migrate"}, {"snapshot"}, {"snapshot", "save"}, {"snapshot", "restore"}, {"snapshot", "status"}} {
		t.Run(strings.Join(cmd, " "), func(t *testing.T) {
			r := cachectl(t, append(cmd, "--help")...).ok(t)
			for _, want := range []string{"Usage:", "Examples:", "cachectl"} {
				if !strings.Contains(r.stdout, want) {
					t.Errorf("help lacks %q:\n%s", want, r.stdout)
				}
			}
		})
	}
	if r := cachectl(t).ok(t); !strings.Contains(r.stdout, "Available Commands:") {
		t.Errorf("no arguments: %q", r.stdout)
	}
}

func TestUsageErrors(t *testing.T) {
	cachectl(t, "gte").failed(t, 2, `unknown command "gte"`, `did you mean "get"?`)
	cachectl(t, "--nope").failed(t, 2, "unknown flag: --nope")
	// The flag belongs to the command meant: the name is the mistake.
	cachectl(t, "inf", "--db", "x").failed(t, 2, `unknown command "inf" for "cachectl"`, `did you mean "info"?`)
	cachectl(t, "snapshot", "sav", "x").failed(t, 2, `unknown command "sav"`, `did you mean "save"?`)
	cachectl(t, "info", "--timeout", "0s", "--db", fixtureFile).failed(t, 2, "--timeout must be positive")
}

func TestCompletion(t *testing.T) {
	if r := cachectl(t, "completion", "bash").ok(t); !strings.Contains(r.stdout, "bash completion") {
		t.Errorf("bash: %.200q", r.stdout)
	}
	if r := cachectl(t, "completion", "zsh").ok(t); !strings.Contains(r.stdout, "#compdef cachectl") {
		t.Errorf("zsh: %.200q", r.stdout)
	}
	// Resource names come from the file.
	r := cachectl(t, "__complete", "get", "--db", fixtureFile, "")
	for _, want := range []string{"pods\n", "configmaps\n", "widgets.example.com\n", ":4\n"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("completion lacks %q: %q", want, r.stdout)
		}
	}
}
