/*
 * Checks of a valid spec against the world the submit host sees
 * (cli/preflight.c): located diagnostics into d; CADRE_ERR_INVALID when
 * one is an error.
 */
#ifndef CADRE_CLI_PREFLIGHT_H
#define CADRE_CLI_PREFLIGHT_H

struct diags;
struct spec;

int cli_preflight(const struct spec *s, struct diags *d);

#endif
