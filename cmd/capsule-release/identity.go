package main

// What the release calls capsule, in one place: the npm package, the
// container image and their metadata take these names; the version is the
// binary's own (supervisor.Version, read through `capsule version --json`).
const (
	// npmName is the npm package's name; `npx -y npmName` serves MCP on
	// stdio.
	npmName = "@capsule-run/mcp-server"
	// imageName is the container image's name, tagged with the version.
	imageName = "capsule"
	// sourceURL is where capsule's source is published: the npm
	// package's repository and the image's org.opencontainers.image.source.
	sourceURL = "https://github.com/capsule-run/capsule"
	// description is the one-line summary of both.
	description = "MCP server that runs AI agents' Python and JavaScript code in WebAssembly sandboxes, one locked-down process per call"
	// licence is capsule's own licence, as an SPDX expression.
	licence = "Apache-2.0"
)
