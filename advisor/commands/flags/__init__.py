"""The flags several commands share, each module one group: `output` (--format, --output),
`scheduler` (--scheduler), `sources` (the live sources' addresses, access and bounds),
`scenario` (the scenario file's limits), `rightsizing` (report's history needs), and
`values` (the typed values they all take: finite numbers in range, sizes, durations).
A flag one command alone takes stays in that command's module."""
