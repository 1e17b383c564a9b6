// Package pemkey reads the private key of a key_file login from a PEM
// file, encrypted with the profile's secret or not: PKCS#8 (encrypted as
// `openssl pkcs8 -topk8` makes it, or plain), PKCS#1 RSA and SEC 1 EC keys
// (in the traditional encrypted form, or plain); and, with its certificate,
// the TLS client certificate of the login.
package pemkey

import (
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"os"

	"github.com/youmark/pkcs8"

	"github.com/etl-craft/etl-craft/internal/exit"
)

// Read returns the private key in the PEM file at path, decrypted with
// passphrase when it is encrypted. Every failure is a configuration error
// that names the file and never the passphrase.
func Read(path, passphrase string) (crypto.Signer, error) {
	buf, err := os.ReadFile(path)
	if err != nil {
		return nil, exit.Wrap(exit.Configuration, err, "could not read key_file %s", path)
	}
	block, _ := pem.Decode(buf)
	if block == nil {
		return nil, exit.Errorf(exit.Configuration, "key_file %s holds no PEM private key", path)
	}
	der := block.Bytes
	if x509.IsEncryptedPEMBlock(block) {
		if der, err = x509.DecryptPEMBlock(block, []byte(passphrase)); err != nil {
			return nil, wrongPassphrase(path)
		}
	}
	var key any
	switch block.Type {
	case "ENCRYPTED PRIVATE KEY":
		key, err = pkcs8.ParsePKCS8PrivateKey(der, []byte(passphrase))
	case "PRIVATE KEY":
		key, err = x509.ParsePKCS8PrivateKey(der)
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(der)
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(der)
	default:
		return nil, exit.Errorf(exit.Configuration, "key_file %s holds a %s, not a private key", path, block.Type)
	}
	if err != nil {
		// A wrong passphrase, or a damaged key: a decryption with the wrong
		// key may even pass its padding check, and then fails to parse.
		return nil, wrongPassphrase(path)
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, exit.Errorf(exit.Configuration, "key_file %s holds a %T, which cannot sign", path, key)
	}
	return signer, nil
}

// ClientCertificate returns the function that reads a key_file login's
// TLS client certificate: the certificate chain in certFile with the key in
// keyFile, decrypted with the passphrase (nil: none) when it is encrypted.
// Every failure is a configuration error that names the files and never
// the passphrase.
func ClientCertificate(keyFile, certFile string, passphrase func() (string, error)) func() (tls.Certificate, error) {
	return func() (tls.Certificate, error) {
		var pass string
		if passphrase != nil {
			var err error
			if pass, err = passphrase(); err != nil {
				return tls.Certificate{}, err
			}
		}
		key, err := Read(keyFile, pass)
		if err != nil {
			return tls.Certificate{}, err
		}
		if certFile == "" {
			return tls.Certificate{}, exit.Errorf(exit.Configuration,
				"auth_mode key_file needs the client certificate: set cert_file (or, on PostgreSQL, sslcert in jdbc_url)")
		}
		buf, err := os.ReadFile(certFile)
		if err != nil {
			return tls.Certificate{}, exit.Wrap(exit.Configuration, err, "could not read cert_file %s", certFile)
		}
		var cert tls.Certificate
		for block, rest := pem.Decode(buf); block != nil; block, rest = pem.Decode(rest) {
			if block.Type == "CERTIFICATE" {
				cert.Certificate = append(cert.Certificate, block.Bytes)
			}
		}
		if len(cert.Certificate) == 0 {
			return tls.Certificate{}, exit.Errorf(exit.Configuration, "cert_file %s holds no PEM certificate", certFile)
		}
		leaf, err := x509.ParseCertificate(cert.Certificate[0])
		if err != nil {
			return tls.Certificate{}, exit.Wrap(exit.Configuration, err, "cert_file %s holds no valid certificate", certFile)
		}
		if pub, ok := key.Public().(interface{ Equal(crypto.PublicKey) bool }); !ok || !pub.Equal(leaf.PublicKey) {
			return tls.Certificate{}, exit.Errorf(exit.Configuration,
				"cert_file %s is not the certificate of the key in key_file %s", certFile, keyFile)
		}
		cert.PrivateKey, cert.Leaf = key, leaf
		return cert, nil
	}
}

// wrongPassphrase is the error of a key that the profile's secret does not
// decrypt.
func wrongPassphrase(path string) error {
	return exit.Errorf(exit.Configuration,
		"could not decrypt key_file %s with the profile's secret: the passphrase is wrong or the key is damaged", path)
}
