/**
 * The {@code efa-ah} command line (picocli): {@code devices}, {@code demo}, {@code stress},
 * {@code pingpong}. Not an API: only {@link org.efaah.cli.Main} is public, as the entry point, and
 * {@link org.efaah.cli.CliLogging}, as the service Logback finds the command line's logging by.
 */
package org.efaah.cli;
