package warehouse

import (
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"os"

	"github.com/youmark/pkcs8"

	"github.com/etl-craft/etl-craft/internal/exit"
)

// readRSAKey reads the RSA private key of a key_file login from the PEM
// file at path: PKCS#8, encrypted with passphrase or not (as Snowflake's
// key-pair guide makes it), or PKCS#1, in the traditional encrypted form
// or not. Every failure is a configuration error that names the file and
// never the passphrase.
func readRSAKey(path, passphrase string) (*rsa.PrivateKey, error) {
	buf, err := os.ReadFile(path)
	if err != nil {
		return nil, exit.Wrap(exit.Configuration, err, "could not read key_file %s", path)
	}
	block, _ := pem.Decode(buf)
	if block == nil {
		return nil, exit.Errorf(exit.Configuration, "key_file %s holds no PEM private key", path)
	}
	var key any
	switch {
	case block.Type == "ENCRYPTED PRIVATE KEY":
		key, err = pkcs8.ParsePKCS8PrivateKey(block.Bytes, []byte(passphrase))
	case block.Type == "PRIVATE KEY":
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	case block.Type == "RSA PRIVATE KEY" && x509.IsEncryptedPEMBlock(block):
		var der []byte
		if der, err = x509.DecryptPEMBlock(block, []byte(passphrase)); err == nil {
			key, err = x509.ParsePKCS1PrivateKey(der)
		}
	case block.Type == "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	default:
		return nil, exit.Errorf(exit.Configuration, "key_file %s holds a %s, not a private key", path, block.Type)
	}
	if err != nil {
		return nil, exit.Errorf(exit.Configuration,
			"could not read the private key in key_file %s with the profile's secret: the passphrase is wrong or the key is damaged", path)
	}
	rsaKey, ok := key.(*rsa.PrivateKey)
	if !ok {
		return nil, exit.Errorf(exit.Configuration, "key_file %s holds a %T key; key-pair logins need an RSA key", path, key)
	}
	return rsaKey, nil
}
