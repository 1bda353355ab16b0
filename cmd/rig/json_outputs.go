package main

import (
	"rig/bench"
	"rig/hugepages"
	"rig/lab"
	"rig/provision/card"
	"rig/smartnic"
)

// The -o json documents that are not a package's own type, named so that
// their JSON Schemas (docs/schema, jsonschema_test.go) are generated from
// the very types emitted.

// lineRateSchema names `rig bench linerate -o json` (a table, not a
// bench.Result: its own name).
const lineRateSchema = "rig.bench.linerate/v1"

// lineRateReport is `rig bench linerate -o json`.
type lineRateReport struct {
	SchemaVersion string        `json:"schemaVersion"`
	Rows          []lineRateRow `json:"rows"`
}

// lineRateRow is one frame size: Mpps by link speed ("25G").
type lineRateRow struct {
	Frame int                `json:"frame"`
	Mpps  map[string]float64 `json:"mpps"`
}

// benchProfilesReport is `rig bench profiles -o json`.
type benchProfilesReport struct {
	SchemaVersion string          `json:"schemaVersion"`
	Profiles      []bench.Profile `json:"profiles"`
}

// fwsimPowerCycleReport is `rig fwsim power-cycle -o json`.
type fwsimPowerCycleReport struct {
	SchemaVersion string   `json:"schemaVersion"`
	Changed       []string `json:"changed"`
}

// fwsimRebootReport is `rig fwsim reboot -o json`.
type fwsimRebootReport struct {
	SchemaVersion string   `json:"schemaVersion"`
	NVAccessLost  []string `json:"nvAccessLost"`
}

// hugepagesShowReport is `rig hugepages show -o json`.
type hugepagesShowReport struct {
	SchemaVersion string `json:"schemaVersion"`
	*hugepages.State
	MeminfoMismatch  string `json:"meminfoMismatch,omitempty"`
	RuntimeDirsError string `json:"runtimeDirsError,omitempty"`
}

// mstStatusReport is `rig mst status -o json`.
type mstStatusReport struct {
	SchemaVersion string              `json:"schemaVersion"`
	Modules       smartnic.MSTModules `json:"modules"`
	Devices       []smartnic.MSTRow   `json:"devices"`
}

// rdmaLinksReport is `rig rdma links -o json`.
type rdmaLinksReport struct {
	SchemaVersion string              `json:"schemaVersion"`
	Links         []smartnic.RDMALink `json:"links"`
}

// labDownReport is `rig lab down -o json`.
type labDownReport struct {
	SchemaVersion string     `json:"schemaVersion"`
	Name          string     `json:"name"`
	Killed        []lab.Proc `json:"killed"`
	Removed       []string   `json:"removed"`
	Hugepages     []string   `json:"hugepages"`
}

// labListSchema names `rig lab list -o json`: every lab's status (each
// one a `rig lab status` document).
const labListSchema = "rig.lab.list/v1"

// labListReport is `rig lab list -o json`.
type labListReport struct {
	SchemaVersion string       `json:"schemaVersion"`
	Labs          []lab.Status `json:"labs"`
}

// modeSchema names `rig mode show -o json`.
const modeSchema = "rig.mode/v1"

// modeReport is `rig mode show -o json`.
type modeReport struct {
	SchemaVersion string            `json:"schemaVersion"`
	Devices       []card.ModeReport `json:"devices"`
}

// playbooksSchema names `rig playbooks -o json`.
const playbooksSchema = "rig.playbooks/v1"

// playbooksReport is `rig playbooks -o json`.
type playbooksReport struct {
	SchemaVersion string   `json:"schemaVersion"`
	Playbooks     []string `json:"playbooks"`
}

// hugepagesCleanSchema names `rig hugepages clean -o json`.
const hugepagesCleanSchema = "rig.hugepages.clean/v1"

// hugepagesCleanReport is `rig hugepages clean -o json`.
type hugepagesCleanReport struct {
	SchemaVersion string `json:"schemaVersion"`
	hugepages.CleanReport
}
