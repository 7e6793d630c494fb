"""The content tree a build reads: which files are documents (``documents``), which the site
leaves out (``exclude``), links never followed (``confine``) and where another generator
publishes each document (``pages``)."""
