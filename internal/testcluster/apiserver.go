package testcluster

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
)

// Files in the cluster's directory.
const (
	tokenFile      = "tokens.csv"
	saKeyFile      = "sa.key"
	saPubFile      = "sa.pub"
	certDir        = "apiserver-certs"
	servingCrtFile = "apiserver.crt" // written by kube-apiserver into certDir
)

// Identity of the admin token.
const (
	AdminUser  = "testcluster-admin"
	AdminGroup = "system:masters"
)

// writeAuthFiles writes the static token file with a new random admin token
// and the service-account signing key, and returns the token.
func writeAuthFiles(dir string) (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("testcluster: admin token: %w", err)
	}
	token := hex.EncodeToString(b)
	// token,user,uid,"group,..."
	line := fmt.Sprintf("%s,%s,%s,%q\n", token, AdminUser, AdminUser, AdminGroup)
	if err := os.WriteFile(filepath.Join(dir, tokenFile), []byte(line), 0o600); err != nil {
		return "", fmt.Errorf("testcluster: %w", err)
	}

	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return "", fmt.Errorf("testcluster: service-account key: %w", err)
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return "", fmt.Errorf("testcluster: service-account key: %w", err)
	}
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub})
	if err := os.WriteFile(filepath.Join(dir, saKeyFile), keyPEM, 0o600); err != nil {
		return "", fmt.Errorf("testcluster: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, saPubFile), pubPEM, 0o644); err != nil {
		return "", fmt.Errorf("testcluster: %w", err)
	}
	return token, nil
}

// apiServerArgs returns kube-apiserver's flags. They depend only on the
// directory and the ports, so a restart serves the same certificate on the
// same port from the same etcd.
func (c *Cluster) apiServerArgs() []string {
	args := []string{
		"--etcd-servers=" + c.etcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(c.apiPort),
		// With no --tls-cert-file, kube-apiserver generates a self-signed
		// CA and serving certificate here once and reuses them on restart.
		"--cert-dir=" + filepath.Join(c.dir, certDir),
		"--token-auth-file=" + filepath.Join(c.dir, tokenFile),
		"--anonymous-auth=false",
		"--authorization-mode=AlwaysAllow",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + filepath.Join(c.dir, saPubFile),
		"--service-account-signing-key-file=" + filepath.Join(c.dir, saKeyFile),
		"--service-cluster-ip-range=10.0.0.0/24",
		// ServiceAccount admission rejects a Pod whose service account does
		// not exist, and without a controller-manager nobody creates the
		// "default" one of a namespace.
		"--disable-admission-plugins=ServiceAccount",
		// The endpoints of the "kubernetes" Service would be 127.0.0.1,
		// which Endpoints validation rejects every few seconds.
		"--endpoint-reconciler-type=none",
		"--profiling=false",
	}
	return append(args, c.apiFlags...)
}

// startAPIServerLocked starts kube-apiserver on c.apiPort and waits until
// /readyz answers ok. The caller holds lifecycleMu.
func (c *Cluster) startAPIServerLocked(ctx context.Context) error {
	p, err := startProcess(APIServer, c.apiBin, c.apiServerArgs(), c.LogPath(APIServer))
	if err != nil {
		return err
	}
	if err := c.waitReady(ctx, p, c.apiServerReady); err != nil {
		p.stop()
		return err
	}
	c.mu.Lock()
	c.apiserver = p
	c.mu.Unlock()
	return nil
}

// apiServerReady asks /readyz, which answers ok once every post-start hook
// ran and the watch caches are initialized. Until the first success it
// reads the CA again on each call: kube-apiserver writes the certificate
// directory while it starts. Starts are serialized by lifecycleMu, so only
// one call at a time sets apiHTTP.
func (c *Cluster) apiServerReady(ctx context.Context) error {
	c.mu.Lock()
	hc := c.apiHTTP
	c.mu.Unlock()
	if hc != nil {
		return c.apiGet(ctx, hc, "/readyz", io.Discard)
	}
	crt, err := os.ReadFile(filepath.Join(c.dir, certDir, servingCrtFile))
	if err != nil {
		return err
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(crt) {
		return fmt.Errorf("no certificate in %s yet", servingCrtFile)
	}
	hc = &http.Client{Transport: &http.Transport{
		Proxy:           nil,
		TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
	}}
	if err := c.apiGet(ctx, hc, "/readyz", io.Discard); err != nil {
		hc.CloseIdleConnections()
		return err
	}
	c.mu.Lock()
	c.apiHTTP, c.caData = hc, crt
	c.mu.Unlock()
	return nil
}

// apiGet GETs path from the apiserver with the admin token and copies the
// body of a 200 answer to w.
func (c *Cluster) apiGet(ctx context.Context, hc *http.Client, path string, w io.Writer) error {
	c.mu.Lock()
	url := c.hostLocked() + path
	c.mu.Unlock()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		return fmt.Errorf("GET %s: %s: %s", path, resp.Status, b)
	}
	if _, err := io.Copy(w, resp.Body); err != nil {
		return fmt.Errorf("GET %s: %w", path, err)
	}
	return nil
}

// apiClient returns the HTTP client for the running apiserver, or
// ErrStopped.
func (c *Cluster) apiClient() (*http.Client, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped || c.apiserver == nil || c.apiHTTP == nil {
		return nil, ErrStopped
	}
	return c.apiHTTP, nil
}

// StopAPIServer stops kube-apiserver (SIGTERM, then SIGKILL after a grace
// period) and leaves etcd running. Clients see connection errors until
// StartAPIServer. It is a no-op if the apiserver is not running.
func (c *Cluster) StopAPIServer() {
	c.lifecycleMu.Lock()
	defer c.lifecycleMu.Unlock()
	c.stopAPIServerLocked()
}

func (c *Cluster) stopAPIServerLocked() {
	c.mu.Lock()
	p := c.apiserver
	c.apiserver = nil
	hc := c.apiHTTP
	c.mu.Unlock()
	if p != nil {
		p.stop()
	}
	if hc != nil {
		hc.CloseIdleConnections()
	}
}

// StartAPIServer starts kube-apiserver again after StopAPIServer, on the
// same port and against the same etcd, and waits for /readyz. Its watch
// cache starts empty, at the current revision: a WATCH from an older
// resourceVersion gets an ERROR event carrying 410 Gone, "too old resource
// version" (apierrors.IsResourceExpired).
func (c *Cluster) StartAPIServer(ctx context.Context) error {
	c.lifecycleMu.Lock()
	defer c.lifecycleMu.Unlock()
	c.mu.Lock()
	stopped, running := c.stopped, c.apiserver != nil
	c.mu.Unlock()
	switch {
	case stopped:
		return ErrStopped
	case running:
		return fmt.Errorf("testcluster: %s is already running", APIServer)
	}
	return c.startAPIServerLocked(ctx)
}

// RestartAPIServer is StopAPIServer followed by StartAPIServer.
func (c *Cluster) RestartAPIServer(ctx context.Context) error {
	c.lifecycleMu.Lock()
	defer c.lifecycleMu.Unlock()
	c.mu.Lock()
	stopped := c.stopped
	c.mu.Unlock()
	if stopped {
		return ErrStopped
	}
	c.stopAPIServerLocked()
	return c.startAPIServerLocked(ctx)
}
