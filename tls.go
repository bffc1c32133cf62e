package hourglass

import (
	"crypto/tls"
	"net"
	"strings"
)

// tlsConfig is the TLS configuration for rediss+ URLs: the system roots,
// checking the first host's name.
func tlsConfig(hosts string) *tls.Config {
	first, _, _ := strings.Cut(hosts, ",")
	host, _, err := net.SplitHostPort(first)
	if err != nil {
		host = first
	}
	return &tls.Config{ServerName: host, MinVersion: tls.VersionTLS12}
}
