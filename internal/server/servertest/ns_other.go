//go:build !linux

package servertest

import "errors"

func inNamespace(string, func() error) error {
	return errors.New("servertest: network namespaces are Linux's")
}
