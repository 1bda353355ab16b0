module rig

go 1.26.0

require (
	github.com/Mellanox/rdmamap v1.1.0
	github.com/digitalocean/go-openvswitch v0.0.0-20241021184246-19e734367535
	github.com/google/gopacket v1.1.19
	github.com/spf13/cobra v1.10.2
	github.com/spf13/pflag v1.0.9
	github.com/vishvananda/netlink v1.3.1
	github.com/vishvananda/netns v0.0.5
	golang.org/x/sys v0.50.0
	gopkg.in/yaml.v3 v3.0.1
)

require (
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	golang.org/x/net v0.0.0-20210525063256-abc453219eb5 // indirect
)
