package backends

import "strconv"

var (
	ownerTooLong       = "longer than " + strconv.Itoa(MaxOwnerLen) + " bytes"
	fingerprintTooLong = "longer than " + strconv.Itoa(MaxFingerprintLen) + " bytes"
)

// OwnerProblem returns why owner cannot be the Owner of a store call:
// "longer than 255 bytes" (MaxOwnerLen), or "empty" when required; ""
// when it can. Claim, Complete, Renew, Release, Hold and LeaseHeld
// require an owner, Resolve does not (see "Inputs" in the package
// documentation). It never allocates.
func OwnerProblem(owner string, required bool) string {
	switch {
	case len(owner) > MaxOwnerLen:
		return ownerTooLong
	case required && owner == "":
		return "empty"
	}
	return ""
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
