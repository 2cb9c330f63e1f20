"""The command line: the only place that parses argv, prints for humans and exits."""
