"""Models from other ecosystems as training directories (`t2t-importer`), the reverse of
`t2t_keras.export`: nothing downstream knows where a model came from."""
