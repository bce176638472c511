"""Files the workbench writes and reads: the .hlox file (saved, manifest, archive), the
offline report, and the reproducer folder. Above analysis, below the facade."""
