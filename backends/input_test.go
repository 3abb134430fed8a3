package backends

import (
	"strings"
	"testing"
)

func TestOwnerProblem(t *testing.T) {
	for _, c := range []struct {
		owner    string
		required bool
		want     string
	}{
		{"", true, "empty"},
		{"", false, ""},
		{"t", true, ""},
		{strings.Repeat("t", MaxOwnerLen), true, ""},
		{strings.Repeat("t", MaxOwnerLen+1), true, "longer than 255 bytes"},
		{strings.Repeat("t", MaxOwnerLen+1), false, "longer than 255 bytes"},
		{strings.Repeat("é", MaxOwnerLen/2), true, ""},
		{"o\xff", true, "not valid UTF-8"},
		{"\xff\xfe", false, "not valid UTF-8"},
		{"o\x00", true, "contains NUL"},
		{"\x00", false, "contains NUL"},
		{strings.Repeat("\xff", MaxOwnerLen+1), true, "longer than 255 bytes"},
		{"0123456789abcdef0123456789abcdef", true, ""}, // the core's token
	} {
		if got := OwnerProblem(c.owner, c.required); got != c.want {
			t.Errorf("OwnerProblem(%d bytes, %v) = %q, want %q", len(c.owner), c.required, got, c.want)
		}
	}
}

func TestFingerprintProblem(t *testing.T) {
	for n, want := range map[int]string{0: "", 1: "", MaxFingerprintLen: "", MaxFingerprintLen + 1: "longer than 64 bytes"} {
		if got := FingerprintProblem(make([]byte, n)); got != want {
			t.Errorf("FingerprintProblem(%d bytes) = %q, want %q", n, got, want)
		}
	}
	if got := FingerprintProblem(nil); got != "" {
		t.Errorf("FingerprintProblem(nil) = %q", got)
	}
}

func TestInputProblemsDoNotAllocate(t *testing.T) {
	owner, long, fp := strings.Repeat("t", 32), strings.Repeat("t", MaxOwnerLen+1), make([]byte, MaxFingerprintLen+1)
	if n := testing.AllocsPerRun(100, func() {
		_ = OwnerProblem(owner, true)
		_ = OwnerProblem(long, true)
		_ = OwnerProblem("", true)
		_ = OwnerProblem("o\xff", true)
		_ = FingerprintProblem(fp)
		_, _ = HeldProblem(long, long)
		_, _ = HeldProblem("c", "m\xff")
		_, _ = HeldProblem("c", "m")
	}); n != 0 {
		t.Errorf("%v allocations", n)
	}
}

func TestHeldProblem(t *testing.T) {
	for _, c := range []struct {
		code, message string
		field, reason string
	}{
		{"", "", "", ""},
		{"provider_timeout", "the provider did not answer\n\tafter 30s", "", ""},
		{strings.Repeat("c", MaxHeldCodeLen), strings.Repeat("é", MaxHeldMessageLen/2), "", ""},
		{strings.Repeat("c", MaxHeldCodeLen+1), "", "Code", "longer than 64 bytes"},
		{"", strings.Repeat("m", MaxHeldMessageLen+1), "Message", "longer than 512 bytes"},
		{strings.Repeat("c", MaxHeldCodeLen+1), strings.Repeat("m", MaxHeldMessageLen+1), "Code", "longer than 64 bytes"},
		{"c\xff", "", "Code", "not valid UTF-8"},
		{"", "m\xe9", "Message", "not valid UTF-8"},
		{"c\x00", "", "Code", "contains NUL"},
		{"", "m\x00", "Message", "contains NUL"},
	} {
		field, reason := HeldProblem(c.code, c.message)
		if field != c.field || reason != c.reason {
			t.Errorf("HeldProblem(%.20q, %.20q) = %q, %q, want %q, %q", c.code, c.message, field, reason, c.field, c.reason)
		}
	}
}
