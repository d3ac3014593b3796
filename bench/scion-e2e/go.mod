module linerate/bench/scion-e2e

go 1.26.4

require (
	github.com/gopacket/gopacket v1.3.1
	github.com/scionproto/scion v0.15.1
	golang.org/x/net v0.55.0
)

require (
	github.com/dchest/cmac v1.0.0 // indirect
	go.uber.org/multierr v1.11.0 // indirect
	go.uber.org/zap v1.27.0 // indirect
	golang.org/x/crypto v0.52.0 // indirect
	golang.org/x/sys v0.45.0 // indirect
)
