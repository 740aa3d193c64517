// Package pgtest starts a real, throw-away PostgreSQL server for tests:
// Debian's postgresql package (initdb and pg_ctl under
// /usr/lib/postgresql/*/bin, installed by `make apt-deps`), a data
// directory and unix socket in a temporary directory, and a random port on
// 127.0.0.1. As root it runs the server as the postgres user (initdb
// refuses root). Without PostgreSQL a test skips saying why, except under
// CI (CI=true), where it fails. Stop and Resume stop a server and start
// it again on its port, for tests of clients that must ride out a
// database that goes away.
//
// It runs on Unix systems (it starts the server as another user).
package pgtest
