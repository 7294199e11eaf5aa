// Package plugin is Talon's plugin host: it finds plugins, decides which
// are on, and gives each agent run the tools of the plugins that are.
//
// Plugins come from four places, searched in OpenClaw's order with the
// first id winning (spec tool-policy §9.1): the directories of
// plugins.load.paths (origin config), the agent workspace's
// .openclaw/extensions (workspace), the plugins compiled into Talon
// (bundled: api-tools, memory-core, image-gen), and the extensions
// directory of the state dir (global; OpenClaw's ~/.openclaw/extensions).
// Each MCP server of mcp.servers is a plugin too, of origin config, whose
// id is the server's name. Whether a plugin is on is policy.LoadState:
// exactly OpenClaw's enable rules, with the memory slot.
//
// An on-disk plugin is a directory with an openclaw.plugin.json manifest
// (id, kind, configSchema; plugins.entries.<id>.config is validated
// against the schema). Talon runs no TypeScript: what it loads from such a
// directory is its api-tools/*.yaml files, registered as that plugin's
// tools. A plugin with code but nothing Talon can load is listed as such,
// never silently dropped.
//
// A compiled-in plugin is a Module registered by id from its own
// package's init (api-tools in plugin/apitools, image-gen in
// plugin/imagegen, memory-core in memory); the binary chooses the set by
// importing internal/standard. Each config gets a fresh instance that goes
// through construct → decode (its entry's config, strictly; DecodeStrict
// does it for a plain struct) → provision → validate, and is closed when a
// later config no longer uses it. What the host offers a module is Provision: the state dir, a log, the
// tenant's network guard, whether runs see the process environment,
// Shared for tenant-wide services (memory-core's index) and YAMLTools,
// the loader of api-tools/ folders the host also uses for on-disk plugins.
//
// Env: a plugin reads its config's env (Run.Env). The process environment
// (Run.ProcessEnv) is there for the default tenant only, and a plugin
// reads from it only names the operator's config gives it: image-gen's
// apiKeyEnv, and for YAML tools the names listed in
// plugins.entries.api-tools.config.processEnv, never a name a YAML file
// chooses. Every result of a YAML tool passes through its call's Redact.
//
// Host is one tenant's plugin host and lives as long as the tenant; its
// Configure builds an immutable Set for one config version, so enabling or
// disabling a plugin takes effect at the next turn without a restart. A Set
// is safe for concurrent use by many runs.
package plugin
