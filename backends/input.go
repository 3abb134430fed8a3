package backends

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

var (
	ownerTooLong       = "longer than " + strconv.Itoa(MaxOwnerLen) + " bytes"
	fingerprintTooLong = "longer than " + strconv.Itoa(MaxFingerprintLen) + " bytes"
	heldCodeTooLong    = "longer than " + strconv.Itoa(MaxHeldCodeLen) + " bytes"
	heldMessageTooLong = "longer than " + strconv.Itoa(MaxHeldMessageLen) + " bytes"
)

// OwnerProblem returns why owner cannot be the Owner of a store call:
// "longer than 255 bytes" (MaxOwnerLen), "not valid UTF-8" or "contains
// NUL" (a PostgreSQL text column stores neither), or "empty" when
// required; "" when it can. Claim, Complete, Renew, Release, Hold and
// LeaseHeld require an owner, Resolve does not (see "Inputs" in the
// package documentation). The core's owner tokens (22 base64url characters)
// always pass. It never allocates.
func OwnerProblem(owner string, required bool) string {
	if required && owner == "" {
		return "empty"
	}
	return heldTextProblem(owner, MaxOwnerLen, ownerTooLong)
}

// FingerprintProblem returns why fp cannot be the Fingerprint of a store
// call (Claim, Resolve): "longer than 64 bytes" (MaxFingerprintLen); ""
// when it can. An empty fingerprint means "no check". It never allocates.
func FingerprintProblem(fp []byte) string {
	if len(fp) > MaxFingerprintLen {
		return fingerprintTooLong
	}
	return ""
}

// HeldProblem returns which of a hold's code and message
// (HoldParams.Code, HoldParams.Message) cannot be stored, "Code" or
// "Message", and why: "longer than 64 bytes" (MaxHeldCodeLen), "longer
// than 512 bytes" (MaxHeldMessageLen), "not valid UTF-8" or "contains
// NUL" (a PostgreSQL text column stores neither). It returns "", "" when
// both can; empty ones can. Other control characters (a newline, a tab)
// pass: a message may span lines. It never allocates.
func HeldProblem(code, message string) (field, reason string) {
	if r := heldTextProblem(code, MaxHeldCodeLen, heldCodeTooLong); r != "" {
		return "Code", r
	}
	if r := heldTextProblem(message, MaxHeldMessageLen, heldMessageTooLong); r != "" {
		return "Message", r
	}
	return "", ""
}

func heldTextProblem(s string, limit int, tooLong string) string {
	switch {
	case len(s) > limit:
		return tooLong
	case !utf8.ValidString(s):
		return "not valid UTF-8"
	case strings.IndexByte(s, 0) >= 0:
		return "contains NUL"
	}
	return ""
}
