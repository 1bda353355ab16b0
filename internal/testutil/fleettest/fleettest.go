// Package fleettest reads the fleet report that ansible/site.yml writes
// (fleet-report.json, rig.fleet/v1, and fleet-report.md): the part of it
// the fleet tests assert (cmd/rig's fleet test over SSH, ansible's check
// mode test).
package fleettest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// Entry is the part of a fleet report's host entry the tests check.
type Entry struct {
	Host         string    `json:"host"`
	Address      string    `json:"address"`
	Card         string    `json:"card"`
	Mode         string    `json:"mode"`
	Status       string    `json:"status"`
	StepsChanged []string  `json:"steps_changed"`
	PowerCycled  bool      `json:"power_cycled"`
	CheckMpps    []float64 `json:"check_mpps"`
	CheckPass    *bool     `json:"check_pass"`
	Error        string    `json:"error"`
}

// Report is fleet-report.json.
type Report struct {
	SchemaVersion string `json:"schemaVersion"`
	Summary       struct {
		Hosts    int            `json:"hosts"`
		Ready    int            `json:"ready"`
		ByStatus map[string]int `json:"byStatus"`
	} `json:"summary"`
	Hosts []Entry `json:"hosts"`
}

// Read reads dir's fleet report: the JSON document (rig.fleet/v1), its
// entries by host, and the Markdown table.
func Read(t testing.TB, dir string) (*Report, map[string]Entry, string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "fleet-report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r Report
	if err := json.Unmarshal(b, &r); err != nil || r.SchemaVersion != "rig.fleet/v1" {
		t.Fatalf("fleet-report.json: %v\n%s", err, b)
	}
	by := map[string]Entry{}
	for _, h := range r.Hosts {
		by[h.Host] = h
	}
	md, err := os.ReadFile(filepath.Join(dir, "fleet-report.md"))
	if err != nil {
		t.Fatal(err)
	}
	return &r, by, string(md)
}
