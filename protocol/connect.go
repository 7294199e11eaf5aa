package protocol

// ConnectParams are the params of the first request, "connect".
type ConnectParams struct {
	MinProtocol int          `json:"minProtocol"`
	MaxProtocol int          `json:"maxProtocol"`
	Client      ClientInfo   `json:"client"`
	Role        string       `json:"role,omitempty"`
	Scopes      []string     `json:"scopes,omitempty"`
	Auth        *ConnectAuth `json:"auth,omitempty"`
	Device      *Device      `json:"device,omitempty"`
	Locale      string       `json:"locale,omitempty"`
	UserAgent   string       `json:"userAgent,omitempty"`
	// Node capability claims; accepted and ignored (Talon has no nodes).
	Caps        any `json:"caps,omitempty"`
	Commands    any `json:"commands,omitempty"`
	Permissions any `json:"permissions,omitempty"`
	PathEnv     any `json:"pathEnv,omitempty"`
}

// ClientInfo names the connecting program.
type ClientInfo struct {
	ID              string `json:"id"`
	DisplayName     string `json:"displayName,omitempty"`
	Version         string `json:"version"`
	Platform        string `json:"platform"`
	DeviceFamily    string `json:"deviceFamily,omitempty"`
	ModelIdentifier string `json:"modelIdentifier,omitempty"`
	Mode            string `json:"mode"`
	InstanceID      string `json:"instanceId,omitempty"`
}

// ConnectAuth carries the shared secret or a device token.
type ConnectAuth struct {
	Token          string `json:"token,omitempty"`
	Password       string `json:"password,omitempty"`
	DeviceToken    string `json:"deviceToken,omitempty"`
	BootstrapToken string `json:"bootstrapToken,omitempty"`
}

// Device is a device identity proof (Ed25519 over the challenge nonce).
type Device struct {
	ID        string `json:"id"`
	PublicKey string `json:"publicKey"`
	Signature string `json:"signature"`
	SignedAt  int64  `json:"signedAt"`
	Nonce     string `json:"nonce,omitempty"`
}

// Challenge is the payload of the connect.challenge event.
type Challenge struct {
	Nonce        string   `json:"nonce"`
	Ts           int64    `json:"ts"`
	Capabilities []string `json:"capabilities,omitempty"`
}

// HelloOK is the payload of a successful connect response.
type HelloOK struct {
	Type     string      `json:"type"` // "hello-ok"
	Protocol int         `json:"protocol"`
	Server   ServerInfo  `json:"server"`
	Features Features    `json:"features"`
	Snapshot Snapshot    `json:"snapshot"`
	Auth     *HelloAuth  `json:"auth,omitempty"`
	Policy   HelloPolicy `json:"policy"`
}

// ServerInfo names the server and this connection.
type ServerInfo struct {
	Version string `json:"version"`
	ConnID  string `json:"connId"`
	Host    string `json:"host,omitempty"`
}

// Features lists what the server really serves.
type Features struct {
	Methods []string `json:"methods"`
	Events  []string `json:"events"`
}

// Snapshot is the state a client starts from.
type Snapshot struct {
	Presence        []Presence       `json:"presence"`
	Health          any              `json:"health"`
	StateVersion    StateVersion     `json:"stateVersion"`
	UptimeMs        int64            `json:"uptimeMs"`
	ConfigPath      string           `json:"configPath,omitempty"`
	StateDir        string           `json:"stateDir,omitempty"`
	SessionDefaults *SessionDefaults `json:"sessionDefaults,omitempty"`
	AuthMode        string           `json:"authMode,omitempty"`
}

// Presence is one connected client as others see it.
type Presence struct {
	Host     string   `json:"host,omitempty"`
	Mode     string   `json:"mode,omitempty"`
	Ts       int64    `json:"ts"`
	DeviceID string   `json:"deviceId,omitempty"`
	Roles    []string `json:"roles,omitempty"`
	Scopes   []string `json:"scopes,omitempty"`
	ClientID string   `json:"clientId,omitempty"`
	ConnID   string   `json:"connId,omitempty"`
}

// SessionDefaults tell a client how session keys are formed.
type SessionDefaults struct {
	DefaultAgentID string `json:"defaultAgentId"`
	MainKey        string `json:"mainKey"`
	MainSessionKey string `json:"mainSessionKey"`
	Scope          string `json:"scope"`
}

// HelloAuth is the role and scopes granted.
type HelloAuth struct {
	Role        string   `json:"role"`
	Scopes      []string `json:"scopes"`
	DeviceToken string   `json:"deviceToken,omitempty"`
	IssuedAtMs  int64    `json:"issuedAtMs,omitempty"`
}

// HelloPolicy are the limits the client must honour.
type HelloPolicy struct {
	MaxPayload       int64 `json:"maxPayload"`
	MaxBufferedBytes int64 `json:"maxBufferedBytes"`
	TickIntervalMs   int64 `json:"tickIntervalMs"`
}
