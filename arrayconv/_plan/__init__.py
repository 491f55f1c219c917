"""Plans: a chosen method with its kernel prepared, called once per input; plans kept between calls."""
