// Package connreason says why a connection to a server failed, in words
// free of data: no host, address, user or password, which drivers' error
// messages quote.
package connreason

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"syscall"
)

// Of returns why err, a failed dial or a connection that broke, happened
// ("connection refused", "host not found", "timed out"...), or "" when it
// cannot tell.
func Of(err error) string {
	var dnsErr *net.DNSError
	var errno syscall.Errno
	var netErr net.Error
	var certErr *tls.CertificateVerificationError
	var unknownCA x509.UnknownAuthorityError
	var hostname x509.HostnameError
	switch {
	case errors.As(err, &dnsErr) && dnsErr.IsNotFound:
		return "host not found"
	case errors.As(err, &dnsErr):
		return "host name lookup failed"
	case errors.As(err, &errno):
		return errno.Error() // "connection refused", "no route to host"...
	case errors.As(err, &netErr) && netErr.Timeout():
		return "timed out"
	case errors.As(err, &certErr), errors.As(err, &unknownCA), errors.As(err, &hostname):
		return "the server's TLS certificate is not trusted"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "the server closed the connection"
	}
	return ""
}
