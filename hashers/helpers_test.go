package hashers

import "encoding/hex"

func hexString(b []byte) string { return hex.EncodeToString(b) }
