package dataplane

// openPort is a port the dataplane opened: its name as given, ethdev port
// id, driver and MAC.
type openPort struct {
	name string
	id   uint16
	drv  string
	mac  [6]byte
}
